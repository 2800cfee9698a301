//! PWM through sysfs: `/sys/class/pwm/pwmchipN/pwmM/{period,duty_cycle,enable}`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use embedded_hal::pwm::{self, ErrorKind, ErrorType, SetDutyCycle};

use crate::hal::OpenError;

/// Full scale of the duty cycle [`SysfsPwm`] reports (per mille).
pub const MAX_DUTY: u16 = 1000;

/// A failed write to a sysfs PWM attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysfsPwmError(pub io::ErrorKind);

impl pwm::Error for SysfsPwmError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

/// One sysfs PWM channel, enabled, with a fixed period; the duty cycle is per mille.
#[derive(Debug)]
pub struct SysfsPwm {
    dir: PathBuf,
    period_ns: u64,
}

impl SysfsPwm {
    /// Opens channel `channel` of the chip at `chip` (`/sys/class/pwm/pwmchip0`): exports it
    /// if needed, sets `period_ns`, a zero duty cycle, and enables it.
    pub fn open(chip: &str, channel: u32, period_ns: u64) -> Result<Self, OpenError> {
        let chip = Path::new(chip);
        if !chip.is_dir() {
            return Err(OpenError::NotFound);
        }
        let npwm: u32 = fs::read_to_string(chip.join("npwm"))?
            .trim()
            .parse()
            .map_err(|_| OpenError::Io(io::ErrorKind::InvalidData))?;
        if channel >= npwm {
            return Err(OpenError::NoSuchChannel);
        }
        let dir = chip.join(format!("pwm{channel}"));
        if !dir.is_dir() {
            fs::write(chip.join("export"), channel.to_string())?;
            // udev may take a moment to make the new attributes writable.
            for _ in 0..50 {
                if dir.join("enable").exists() {
                    break;
                }
                thread::sleep(Duration::from_millis(10));
            }
        }
        let pwm = SysfsPwm { dir, period_ns };
        // Duty before period: the kernel refuses a period shorter than the present duty.
        pwm.write("duty_cycle", 0)?;
        pwm.write("period", period_ns)?;
        pwm.write("enable", 1)?;
        Ok(pwm)
    }

    fn write(&self, attr: &str, value: u64) -> Result<(), io::Error> {
        fs::write(self.dir.join(attr), value.to_string())
    }
}

impl ErrorType for SysfsPwm {
    type Error = SysfsPwmError;
}

impl SetDutyCycle for SysfsPwm {
    fn max_duty_cycle(&self) -> u16 {
        MAX_DUTY
    }

    fn set_duty_cycle(&mut self, duty: u16) -> Result<(), SysfsPwmError> {
        let duty = u64::from(duty.min(MAX_DUTY));
        let ns = self.period_ns.saturating_mul(duty) / u64::from(MAX_DUTY);
        self.write("duty_cycle", ns)
            .map_err(|e| SysfsPwmError(e.kind()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_sysfs_tree_gets_period_duty_and_enable() {
        let root = std::env::temp_dir().join(format!("glimmer-pwm-{}", std::process::id()));
        let ch = root.join("pwm1");
        fs::create_dir_all(&ch).unwrap();
        fs::write(root.join("npwm"), "2\n").unwrap();
        let mut pwm = SysfsPwm::open(root.to_str().unwrap(), 1, 20_000).unwrap();
        let read = |a: &str| fs::read_to_string(ch.join(a)).unwrap();
        assert_eq!(read("period"), "20000");
        assert_eq!(read("enable"), "1");
        pwm.set_duty_cycle_percent(25).unwrap();
        assert_eq!(read("duty_cycle"), "5000");
        assert_eq!(
            SysfsPwm::open(root.to_str().unwrap(), 2, 20_000).unwrap_err(),
            OpenError::NoSuchChannel
        );
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(
            SysfsPwm::open("/sys/class/pwm/glimmer-absent", 0, 1000).unwrap_err(),
            OpenError::NotFound
        );
    }
}
