//! Boards open the devices a tool map names: [`SimBoard`] on the simulated plant,
//! [`LinuxBoard`] on Linux device files.

use std::sync::Arc;

use super::device::Device;
use super::error::Problem;
use crate::hal::clock::Clock;
use crate::hal::pwm::PwmActuator;
use crate::hal::relay::{Polarity, Relay};
use crate::hal::sim::{Faults, Plant, PlantParams, Probe, SimFanPin, SimHeaterPwm, SimI2c};
use crate::hal::tmp102::Tmp102;
use crate::profiles::ToolMapEntry;

/// Something that opens the device behind a tool map entry.
pub trait Board {
    /// Opens `entry`'s device, or says why not.
    fn open(&self, entry: &ToolMapEntry) -> Result<Device, Problem>;
}

/// Parses an address: `0x48` (hex) or `17` (decimal).
pub fn parse_address(text: &str) -> Option<u32> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

fn i2c_address(entry: &ToolMapEntry) -> Result<u8, Problem> {
    parse_address(entry.address)
        .and_then(|a| u8::try_from(a).ok())
        .filter(|a| *a <= 0x7F)
        .ok_or(Problem::BadAddress)
}

/// The simulated board: one [`Plant`], a simulated I2C bus with a TMP102 per sensor entry
/// (entries named `ambient` read the ambient air, others the zone), the fan relay and the
/// heater PWM. All entries must name bus `sim`.
#[derive(Clone, Debug)]
pub struct SimBoard {
    plant: Plant,
    faults: Faults,
    bus: SimI2c,
}

impl SimBoard {
    /// A board whose plant runs on `clock`.
    pub fn new(params: PlantParams, clock: Arc<dyn Clock>) -> Self {
        let plant = Plant::new(params, clock);
        let faults = Faults::new();
        let bus = SimI2c::new(plant.clone(), faults.clone());
        SimBoard { plant, faults, bus }
    }

    /// The plant (to watch it in tests and demos).
    pub fn plant(&self) -> &Plant {
        &self.plant
    }

    /// The I2C bus faults (to make it hang or fail in tests).
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

impl Board for SimBoard {
    fn open(&self, entry: &ToolMapEntry) -> Result<Device, Problem> {
        if entry.bus != "sim" {
            return Err(Problem::BadBus);
        }
        match entry.driver {
            "tmp102" => {
                let address = i2c_address(entry)?;
                let probe = if entry.name == "ambient" {
                    Probe::Ambient
                } else {
                    Probe::Zone
                };
                self.bus.attach_tmp102(address, probe);
                let s = Tmp102::new(self.bus.clone(), address).map_err(|_| Problem::BadAddress)?;
                Ok(Device::Thermometer(Box::new(s)))
            }
            "relay" => {
                let pin = SimFanPin::new(self.plant.clone());
                Ok(Device::Switch(Box::new(Relay::new(
                    pin,
                    Polarity::ActiveHigh,
                ))))
            }
            "pwm" => {
                let pwm = SimHeaterPwm::new(self.plant.clone());
                Ok(Device::Level(Box::new(PwmActuator::new(pwm))))
            }
            _ => Err(Problem::UnknownDriver),
        }
    }
}

/// The Linux board: `tmp102` on an i2c-dev bus (`/dev/i2c-1`, address `0x48`), `relay` on
/// a GPIO character device line (`/dev/gpiochip0`, address `17`, or `17:active-low`),
/// `pwm` on a sysfs PWM channel (`/sys/class/pwm/pwmchip0`, address `0`) at
/// [`LinuxBoard::PWM_PERIOD_NS`]. Elsewhere than Linux every open is
/// [`OpenError::Unsupported`](crate::hal::OpenError::Unsupported).
#[derive(Clone, Copy, Debug, Default)]
pub struct LinuxBoard;

impl LinuxBoard {
    /// PWM period: 1 kHz.
    pub const PWM_PERIOD_NS: u64 = 1_000_000;
}

#[cfg(target_os = "linux")]
impl Board for LinuxBoard {
    fn open(&self, entry: &ToolMapEntry) -> Result<Device, Problem> {
        use crate::hal::linux;
        match entry.driver {
            "tmp102" => {
                let address = i2c_address(entry)?;
                let bus = linux::open_i2c(entry.bus).map_err(Problem::Open)?;
                let s = Tmp102::new(bus, address).map_err(|_| Problem::BadAddress)?;
                Ok(Device::Thermometer(Box::new(s)))
            }
            "relay" => {
                let (line, polarity) = match entry.address.split_once(':') {
                    Some((l, "active-low")) => (l, Polarity::ActiveLow),
                    Some(_) => return Err(Problem::BadAddress),
                    None => (entry.address, Polarity::ActiveHigh),
                };
                let line = parse_address(line).ok_or(Problem::BadAddress)?;
                let pin = linux::open_output_line(entry.bus, line).map_err(Problem::Open)?;
                Ok(Device::Switch(Box::new(Relay::new(pin, polarity))))
            }
            "pwm" => {
                let ch = parse_address(entry.address).ok_or(Problem::BadAddress)?;
                let pwm = linux::SysfsPwm::open(entry.bus, ch, Self::PWM_PERIOD_NS)
                    .map_err(Problem::Open)?;
                Ok(Device::Level(Box::new(PwmActuator::new(pwm))))
            }
            _ => Err(Problem::UnknownDriver),
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Board for LinuxBoard {
    fn open(&self, entry: &ToolMapEntry) -> Result<Device, Problem> {
        match entry.driver {
            "tmp102" | "relay" | "pwm" => Err(Problem::Open(crate::hal::OpenError::Unsupported)),
            _ => Err(Problem::UnknownDriver),
        }
    }
}
