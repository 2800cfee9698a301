//! The simulated board: a thermal plant behind embedded-hal trait implementations.
//!
//! A [`Plant`] is one thermal zone whose temperature follows the fan and the heater with a
//! time constant, on a [`Clock`](super::clock::Clock). Its parts are the peripherals a
//! real board would have, so the real drivers run on them unchanged:
//! - [`SimI2c`]: an I2C bus answering as TMP102s (one reads the zone, one the ambient air);
//! - [`SimFanPin`]: the fan relay's [`OutputPin`](embedded_hal::digital::OutputPin);
//! - [`SimHeaterPwm`]: the heater's [`SetDutyCycle`](embedded_hal::pwm::SetDutyCycle).
//!
//! [`Faults`] make the bus hang or fail, for tests of timeouts and error paths.

mod faults;
mod i2c;
mod pins;
mod plant;

pub use faults::Faults;
pub use i2c::{Probe, SimI2c, SimI2cError};
pub use pins::{SimFanPin, SimHeaterPwm, HEATER_MAX_DUTY};
pub use plant::{Plant, PlantParams};
