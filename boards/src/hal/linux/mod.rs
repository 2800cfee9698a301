//! The Linux board: I2C through `/dev/i2c-N` (i2c-dev), GPIO lines through the character
//! device (`/dev/gpiochipN`), PWM through sysfs ([`SysfsPwm`]).
//!
//! Opening needs no root at build time; at run time an absent or forbidden device is an
//! [`OpenError`], never a panic.

mod sysfs_pwm;

use std::path::Path;

use linux_embedded_hal::gpio_cdev::{Chip, LineRequestFlags};
use linux_embedded_hal::i2cdev::linux::LinuxI2CError;
pub use linux_embedded_hal::{CdevPin, I2cdev};

pub use sysfs_pwm::{SysfsPwm, SysfsPwmError};

use super::OpenError;

/// Consumer label the GPIO lines are requested under.
pub const GPIO_CONSUMER: &str = "glimmer";

/// Opens the I2C bus at `path` (`/dev/i2c-1`).
pub fn open_i2c(path: &str) -> Result<I2cdev, OpenError> {
    if !Path::new(path).exists() {
        return Err(OpenError::NotFound);
    }
    I2cdev::new(path).map_err(|e| match e {
        LinuxI2CError::Io(io) => OpenError::from(&io),
        LinuxI2CError::Errno(n) => OpenError::from(std::io::Error::from_raw_os_error(n)),
    })
}

/// Requests `line` of the GPIO chip at `chip` (`/dev/gpiochip0`) as an output, low.
pub fn open_output_line(chip: &str, line: u32) -> Result<CdevPin, OpenError> {
    if !Path::new(chip).exists() {
        return Err(OpenError::NotFound);
    }
    let mut chip = Chip::new(chip).map_err(|e| gpio_error(&e))?;
    if line >= chip.num_lines() {
        return Err(OpenError::NoSuchChannel);
    }
    let handle = chip
        .get_line(line)
        .and_then(|l| l.request(LineRequestFlags::OUTPUT, 0, GPIO_CONSUMER))
        .map_err(|e| gpio_error(&e))?;
    CdevPin::new(handle).map_err(|e| gpio_error(&e))
}

fn gpio_error(e: &linux_embedded_hal::gpio_cdev::Error) -> OpenError {
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    io.map_or(OpenError::Io(std::io::ErrorKind::Other), OpenError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_devices_are_typed_errors() {
        let e = open_i2c("/dev/i2c-glimmer-absent").err();
        assert_eq!(e, Some(OpenError::NotFound));
        let e = open_output_line("/dev/gpiochip-glimmer-absent", 3).err();
        assert_eq!(e, Some(OpenError::NotFound));
    }
}
