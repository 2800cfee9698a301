//! A relay or fan on one GPIO line over [`OutputPin`].

use embedded_hal::digital::{OutputPin, StatefulOutputPin};

/// Which pin level turns the load on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polarity {
    /// High is on.
    ActiveHigh,
    /// Low is on (most relay boards).
    ActiveLow,
}

/// A load switched by pin `P`.
#[derive(Debug)]
pub struct Relay<P> {
    pin: P,
    polarity: Polarity,
    on: Option<bool>,
}

impl<P: OutputPin> Relay<P> {
    /// A relay on `pin`; its state is unknown until first set.
    pub fn new(pin: P, polarity: Polarity) -> Self {
        Relay {
            pin,
            polarity,
            on: None,
        }
    }

    /// Switches the load on or off.
    pub fn set(&mut self, on: bool) -> Result<(), P::Error> {
        let high = on == (self.polarity == Polarity::ActiveHigh);
        if high {
            self.pin.set_high()?;
        } else {
            self.pin.set_low()?;
        }
        self.on = Some(on);
        Ok(())
    }

    /// The last state set (`None` before the first).
    pub fn commanded(&self) -> Option<bool> {
        self.on
    }

    /// Gives the pin back.
    pub fn release(self) -> P {
        self.pin
    }
}

impl<P: StatefulOutputPin> Relay<P> {
    /// Whether the load is on, read back from the pin's output latch.
    pub fn read_back(&mut self) -> Result<bool, P::Error> {
        let high = self.pin.is_set_high()?;
        Ok(high == (self.polarity == Polarity::ActiveHigh))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_hal::digital::ErrorKind;
    use embedded_hal_mock::eh1::digital::{Mock, State, Transaction};
    use embedded_hal_mock::eh1::MockError;

    #[test]
    fn active_low_inverts_and_reads_back() {
        let expect = [
            Transaction::set(State::Low),
            Transaction::get_state(State::Low),
            Transaction::set(State::High),
            Transaction::get_state(State::High),
        ];
        let mut r = Relay::new(Mock::new(&expect), Polarity::ActiveLow);
        assert_eq!(r.commanded(), None);
        r.set(true).unwrap();
        assert!(r.read_back().unwrap());
        r.set(false).unwrap();
        assert_eq!(r.commanded(), Some(false));
        assert!(!r.read_back().unwrap());
        r.release().done();
    }

    #[test]
    fn failed_write_keeps_the_old_state() {
        let err = MockError::Io(std::io::ErrorKind::NotConnected);
        let expect = [
            Transaction::set(State::High),
            Transaction::set(State::Low).with_error(err),
        ];
        let mut r = Relay::new(Mock::new(&expect), Polarity::ActiveHigh);
        r.set(true).unwrap();
        let e = r.set(false).unwrap_err();
        assert_eq!(embedded_hal::digital::Error::kind(&e), ErrorKind::Other);
        assert_eq!(r.commanded(), Some(true));
        r.release().done();
    }
}
