//! A 0–100 % actuator (heater, valve) over [`SetDutyCycle`].

use embedded_hal::pwm::SetDutyCycle;

/// Why a duty cycle was not set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PwmError<E> {
    /// The percentage is not a number in 0..=100 (the driver never clamps).
    OutOfRange,
    /// The PWM channel failed.
    Pwm(E),
}

/// An actuator driven by PWM channel `P`.
#[derive(Debug)]
pub struct PwmActuator<P> {
    pwm: P,
    percent: Option<f32>,
}

impl<P: SetDutyCycle> PwmActuator<P> {
    /// An actuator on `pwm`; its level is unknown until first set.
    pub fn new(pwm: P) -> Self {
        PwmActuator { pwm, percent: None }
    }

    /// Sets the output to `percent` of full scale (0 to 100, fractions allowed).
    pub fn set_percent(&mut self, percent: f32) -> Result<(), PwmError<P::Error>> {
        if !(0.0..=100.0).contains(&percent) {
            return Err(PwmError::OutOfRange);
        }
        let duty = duty_for(percent, self.pwm.max_duty_cycle());
        self.pwm.set_duty_cycle(duty).map_err(PwmError::Pwm)?;
        self.percent = Some(percent);
        Ok(())
    }

    /// The last level set, in percent (`None` before the first).
    pub fn commanded(&self) -> Option<f32> {
        self.percent
    }

    /// Gives the channel back.
    pub fn release(self) -> P {
        self.pwm
    }
}

/// The duty cycle (of `max`) nearest `percent` (which is in 0..=100).
pub fn duty_for(percent: f32, max: u16) -> u16 {
    let duty = (f64::from(percent) / 100.0 * f64::from(max)).round();
    // In 0..=max because percent is in 0..=100; `as` saturates regardless.
    duty as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_hal_mock::eh1::pwm::{Mock, Transaction};
    use embedded_hal_mock::eh1::MockError;

    #[test]
    fn scales_percent_to_the_channel_maximum() {
        let expect = [
            Transaction::max_duty_cycle(1000),
            Transaction::set_duty_cycle(375),
            Transaction::max_duty_cycle(1000),
            Transaction::set_duty_cycle(1000),
            Transaction::max_duty_cycle(1000),
            Transaction::set_duty_cycle(0),
        ];
        let mut a = PwmActuator::new(Mock::new(&expect));
        a.set_percent(37.5).unwrap();
        assert_eq!(a.commanded(), Some(37.5));
        a.set_percent(100.0).unwrap();
        a.set_percent(0.0).unwrap();
        a.release().done();
    }

    #[test]
    fn out_of_range_is_refused_not_clamped() {
        let mut a = PwmActuator::new(Mock::new(&[]));
        for bad in [-0.1, 100.5, f32::NAN, f32::INFINITY] {
            assert_eq!(a.set_percent(bad), Err(PwmError::OutOfRange));
        }
        assert_eq!(a.commanded(), None);
        a.release().done();
    }

    #[test]
    fn channel_error_is_passed_on() {
        let err = MockError::Io(std::io::ErrorKind::BrokenPipe);
        let expect = [
            Transaction::max_duty_cycle(255),
            Transaction::set_duty_cycle(128).with_error(err.clone()),
        ];
        let mut a = PwmActuator::new(Mock::new(&expect));
        assert_eq!(a.set_percent(50.0), Err(PwmError::Pwm(err)));
        assert_eq!(a.commanded(), None);
        a.release().done();
    }
}
