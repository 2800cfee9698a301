//! [`DeviceWeights`]: weight tensors copied to the device once, found again by tensor id.

use std::collections::HashMap;

use glimmer_core::model::{Tensor, Weights};
use glimmer_core::quant::GgmlType;

use crate::gpu::{DevMem, Gpu};
use crate::CudaError;

/// Each tensor starts at a multiple of this many bytes.
const ALIGN: usize = 256;

/// One uploaded tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceTensor {
    /// Device address of row 0.
    pub ptr: u64,
    /// Block format.
    pub ty: GgmlType,
    /// Rows.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Bytes per row.
    pub row_bytes: usize,
}

/// Weights on the device, in one allocation per [`DeviceWeights::add`] call.
#[derive(Default)]
pub struct DeviceWeights {
    mem: Vec<DevMem>,
    table: HashMap<u32, DeviceTensor>,
    bytes: u64,
}

impl DeviceWeights {
    /// No weights yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uploads every tensor of a model (the embedding table and the head even when tied).
    pub fn add_model(&mut self, gpu: &Gpu, w: &Weights<'_>) -> Result<(), CudaError> {
        let mut all: Vec<Tensor<'_>> = vec![w.tok_embd, w.output_norm, w.output];
        for l in w.layers.iter() {
            all.extend(l.tensors().copied());
        }
        self.add(gpu, &all)
    }

    /// Uploads `tensors` (skipping ids already on the device) into one new allocation.
    pub fn add(&mut self, gpu: &Gpu, tensors: &[Tensor<'_>]) -> Result<(), CudaError> {
        let mut offs = Vec::with_capacity(tensors.len());
        let mut total = 0usize;
        for t in tensors {
            let rb = t.ty.row_bytes(t.cols).ok_or(CudaError::Overflow)?;
            if rb.checked_mul(t.rows) != Some(t.data.len()) {
                return Err(CudaError::UnknownWeight(t.id));
            }
            if self.table.contains_key(&t.id) || offs.iter().any(|&(id, _)| id == t.id) {
                continue;
            }
            offs.push((t.id, total));
            total = total
                .checked_add(t.data.len())
                .and_then(|v| v.checked_add(ALIGN - 1))
                .ok_or(CudaError::Overflow)?
                & !(ALIGN - 1);
        }
        if offs.is_empty() {
            return Ok(());
        }
        let mem = gpu.alloc(total)?;
        for (id, off) in offs {
            // The id is in `tensors` (it was collected from there).
            let Some(t) = tensors.iter().find(|t| t.id == id) else {
                continue;
            };
            gpu.upload(mem.ptr() + off as u64, t.data)?;
            self.table.insert(
                id,
                DeviceTensor {
                    ptr: mem.ptr() + off as u64,
                    ty: t.ty,
                    rows: t.rows,
                    cols: t.cols,
                    row_bytes: t.data.len() / t.rows.max(1),
                },
            );
            self.bytes += t.data.len() as u64;
        }
        gpu.synchronize()?;
        self.mem.push(mem);
        Ok(())
    }

    /// The device copy of `t`, checked to have the same format and shape.
    pub fn get(&self, t: &Tensor<'_>) -> Result<DeviceTensor, CudaError> {
        match self.table.get(&t.id) {
            Some(d) if d.ty == t.ty && d.rows == t.rows && d.cols == t.cols => Ok(*d),
            _ => Err(CudaError::UnknownWeight(t.id)),
        }
    }

    /// Bytes of tensor data on the device.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}
