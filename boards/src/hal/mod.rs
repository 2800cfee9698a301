//! Drivers over the embedded-hal 1.0 traits, and the boards they run on.
//!
//! The drivers are generic over the traits, so one driver runs on every board:
//! - [`tmp102::Tmp102`]: an I2C temperature sensor (TMP102 register map) over [`I2c`];
//! - [`relay::Relay`]: a relay or fan on one GPIO line over [`OutputPin`];
//! - [`pwm::PwmActuator`]: a 0–100 % actuator (heater, valve) over [`SetDutyCycle`].
//!
//! Boards supply the trait implementations: [`sim`] is a simulated thermal plant (with
//! fault injection for tests) and `linux` (on Linux only) opens `/dev/i2c-N`, the GPIO
//! character device and sysfs PWM. [`clock`] gives both the time: real, or manual in tests.
//!
//! [`I2c`]: embedded_hal::i2c::I2c
//! [`OutputPin`]: embedded_hal::digital::OutputPin
//! [`SetDutyCycle`]: embedded_hal::pwm::SetDutyCycle

pub mod clock;
mod error;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod pwm;
pub mod relay;
pub mod sim;
pub mod tmp102;

pub use error::OpenError;
