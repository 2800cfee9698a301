//! Drivers as the tool box drives them: object-safe views of the embedded-hal drivers,
//! so one tool box serves every board.

use embedded_hal::digital::OutputPin;
use embedded_hal::i2c::I2c;
use embedded_hal::pwm::SetDutyCycle;

use super::error::{HwError, Limit, ToolError};
use crate::hal::pwm::{PwmActuator, PwmError};
use crate::hal::relay::Relay;
use crate::hal::tmp102::Tmp102;

/// A temperature sensor.
pub trait Thermometer: Send {
    /// The temperature, °C.
    fn read_celsius(&mut self) -> Result<f32, HwError>;
}

/// An on/off actuator.
pub trait Switch: Send {
    /// Switches it on or off.
    fn set_on(&mut self, on: bool) -> Result<(), HwError>;
}

/// A 0–100 % actuator.
pub trait Level: Send {
    /// Sets it to `percent`.
    fn set_level(&mut self, percent: f32) -> Result<(), ToolError>;
}

/// One opened device.
pub enum Device {
    /// A sensor.
    Thermometer(Box<dyn Thermometer>),
    /// A relay.
    Switch(Box<dyn Switch>),
    /// A PWM actuator.
    Level(Box<dyn Level>),
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Device::Thermometer(_) => "Device::Thermometer",
            Device::Switch(_) => "Device::Switch",
            Device::Level(_) => "Device::Level",
        })
    }
}

impl<I: I2c + Send> Thermometer for Tmp102<I> {
    fn read_celsius(&mut self) -> Result<f32, HwError> {
        Tmp102::read_celsius(self).map_err(|e| HwError::I2c(embedded_hal::i2c::Error::kind(&e)))
    }
}

impl<P: OutputPin + Send> Switch for Relay<P> {
    fn set_on(&mut self, on: bool) -> Result<(), HwError> {
        self.set(on)
            .map_err(|e| HwError::Gpio(embedded_hal::digital::Error::kind(&e)))
    }
}

impl<P: SetDutyCycle + Send> Level for PwmActuator<P> {
    fn set_level(&mut self, percent: f32) -> Result<(), ToolError> {
        self.set_percent(percent).map_err(|e| match e {
            PwmError::OutOfRange => ToolError::ActuatorLimit(Limit::OutOfRange {
                min_milli: 0,
                max_milli: 100_000,
            }),
            PwmError::Pwm(e) => {
                ToolError::ToolFailed(HwError::Pwm(embedded_hal::pwm::Error::kind(&e)))
            }
        })
    }
}
