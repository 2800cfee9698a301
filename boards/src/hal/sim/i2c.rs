//! A simulated I2C bus with TMP102s on it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use embedded_hal::i2c::{
    self, ErrorKind, ErrorType, I2c, NoAcknowledgeSource, Operation, SevenBitAddress,
};

use super::{Faults, Plant};
use crate::hal::tmp102::{register_from_celsius, REG_CONFIG, REG_TEMPERATURE};

/// The TMP102 configuration register's power-on value.
const CONFIG_DEFAULT: [u8; 2] = [0x60, 0xA0];

/// What a simulated TMP102 measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The plant's zone.
    Zone,
    /// The air outside the zone.
    Ambient,
}

/// An error of the simulated bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimI2cError(pub ErrorKind);

impl i2c::Error for SimI2cError {
    fn kind(&self) -> ErrorKind {
        self.0
    }
}

#[derive(Debug)]
struct Device {
    probe: Probe,
    pointer: u8,
    config: [u8; 2],
}

/// A simulated I2C bus; clones are handles to the same bus (as drivers sharing one).
#[derive(Clone, Debug)]
pub struct SimI2c {
    plant: Plant,
    faults: Faults,
    devices: Arc<Mutex<BTreeMap<SevenBitAddress, Device>>>,
}

impl SimI2c {
    /// An empty bus reading `plant`, with `faults` applied to every transaction.
    pub fn new(plant: Plant, faults: Faults) -> Self {
        SimI2c {
            plant,
            faults,
            devices: Arc::default(),
        }
    }

    /// Puts a TMP102 measuring `probe` at `address` (replacing one there).
    pub fn attach_tmp102(&self, address: SevenBitAddress, probe: Probe) {
        let dev = Device {
            probe,
            pointer: REG_TEMPERATURE,
            config: CONFIG_DEFAULT,
        };
        self.devices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(address, dev);
    }

    fn register(&self, dev: &Device) -> [u8; 2] {
        match dev.pointer {
            REG_TEMPERATURE => register_from_celsius(match dev.probe {
                Probe::Zone => self.plant.temperature(),
                Probe::Ambient => self.plant.ambient(),
            }),
            REG_CONFIG => dev.config,
            _ => [0, 0],
        }
    }
}

impl ErrorType for SimI2c {
    type Error = SimI2cError;
}

impl I2c<SevenBitAddress> for SimI2c {
    fn transaction(
        &mut self,
        address: SevenBitAddress,
        operations: &mut [Operation<'_>],
    ) -> Result<(), Self::Error> {
        self.faults.check().map_err(SimI2cError)?;
        let mut devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        let nack = SimI2cError(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address));
        let dev = devices.get_mut(&address).ok_or(nack)?;
        for op in operations {
            match op {
                Operation::Write(bytes) => {
                    if let Some((&ptr, data)) = bytes.split_first() {
                        dev.pointer = ptr;
                        if ptr == REG_CONFIG && data.len() == 2 {
                            dev.config = [data[0], data[1]];
                        }
                    }
                }
                Operation::Read(buf) => {
                    let reg = self.register(dev);
                    // Registers repeat their two bytes past the end, as the part does.
                    for (i, b) in buf.iter_mut().enumerate() {
                        *b = reg[i % 2];
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::clock::ManualClock;
    use crate::hal::sim::PlantParams;
    use crate::hal::tmp102::Tmp102;

    fn bus() -> (SimI2c, Faults) {
        let plant = Plant::new(PlantParams::default(), Arc::new(ManualClock::new()));
        let faults = Faults::new();
        let bus = SimI2c::new(plant, faults.clone());
        bus.attach_tmp102(0x48, Probe::Zone);
        bus.attach_tmp102(0x49, Probe::Ambient);
        (bus, faults)
    }

    #[test]
    fn the_tmp102_driver_reads_the_plant() {
        let (bus, _) = bus();
        let mut zone = Tmp102::new(bus.clone(), 0x48).unwrap();
        let mut air = Tmp102::new(bus.clone(), 0x49).unwrap();
        assert_eq!(zone.read_celsius().unwrap(), 37.0);
        assert_eq!(air.read_celsius().unwrap(), 22.0);
        let mut cfg = [0; 2];
        let mut raw = bus;
        raw.write_read(0x48, &[REG_CONFIG], &mut cfg).unwrap();
        assert_eq!(cfg, CONFIG_DEFAULT);
    }

    #[test]
    fn absent_address_nacks_and_injected_error_fails() {
        let (bus, faults) = bus();
        let mut none = Tmp102::new(bus.clone(), 0x4A).unwrap();
        let e = none.read_celsius().unwrap_err();
        assert_eq!(e.0, ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address));
        faults.fail_with(Some(ErrorKind::ArbitrationLoss));
        let mut zone = Tmp102::new(bus, 0x48).unwrap();
        assert_eq!(
            zone.read_celsius().unwrap_err().0,
            ErrorKind::ArbitrationLoss
        );
        faults.fail_with(None);
        assert_eq!(zone.read_celsius().unwrap(), 37.0);
    }

    #[test]
    fn hang_blocks_until_released() {
        let (bus, faults) = bus();
        faults.hang();
        let mut zone = Tmp102::new(bus, 0x48).unwrap();
        let t = std::thread::spawn(move || zone.read_celsius());
        while faults.hung() == 0 {
            std::thread::yield_now();
        }
        assert!(!t.is_finished());
        faults.release();
        assert_eq!(t.join().unwrap().unwrap(), 37.0);
        assert_eq!(faults.hung(), 0);
    }
}
