//! The fan pin and heater PWM of the simulated board.

use std::convert::Infallible;

use embedded_hal::digital::{self, OutputPin, StatefulOutputPin};
use embedded_hal::pwm::{self, SetDutyCycle};

use super::Plant;

/// Full scale of the simulated heater PWM.
pub const HEATER_MAX_DUTY: u16 = 1000;

/// The fan relay's pin: high runs the fan (active high).
#[derive(Clone, Debug)]
pub struct SimFanPin {
    plant: Plant,
}

impl SimFanPin {
    /// The fan pin of `plant`.
    pub fn new(plant: Plant) -> Self {
        SimFanPin { plant }
    }
}

impl digital::ErrorType for SimFanPin {
    type Error = Infallible;
}

impl OutputPin for SimFanPin {
    fn set_low(&mut self) -> Result<(), Infallible> {
        self.plant.set_fan(false);
        Ok(())
    }

    fn set_high(&mut self) -> Result<(), Infallible> {
        self.plant.set_fan(true);
        Ok(())
    }
}

impl StatefulOutputPin for SimFanPin {
    fn is_set_high(&mut self) -> Result<bool, Infallible> {
        Ok(self.plant.fan())
    }

    fn is_set_low(&mut self) -> Result<bool, Infallible> {
        Ok(!self.plant.fan())
    }
}

/// The heater's PWM channel, `0..=HEATER_MAX_DUTY`.
#[derive(Clone, Debug)]
pub struct SimHeaterPwm {
    plant: Plant,
}

impl SimHeaterPwm {
    /// The heater channel of `plant`.
    pub fn new(plant: Plant) -> Self {
        SimHeaterPwm { plant }
    }
}

impl pwm::ErrorType for SimHeaterPwm {
    type Error = Infallible;
}

impl SetDutyCycle for SimHeaterPwm {
    fn max_duty_cycle(&self) -> u16 {
        HEATER_MAX_DUTY
    }

    fn set_duty_cycle(&mut self, duty: u16) -> Result<(), Infallible> {
        let duty = duty.min(HEATER_MAX_DUTY);
        self.plant
            .set_heater(f32::from(duty) / f32::from(HEATER_MAX_DUTY));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::hal::clock::ManualClock;
    use crate::hal::pwm::PwmActuator;
    use crate::hal::relay::{Polarity, Relay};
    use crate::hal::sim::PlantParams;

    #[test]
    fn drivers_move_the_plant_inputs() {
        let plant = Plant::new(PlantParams::default(), Arc::new(ManualClock::new()));
        let mut fan = Relay::new(SimFanPin::new(plant.clone()), Polarity::ActiveHigh);
        fan.set(true).unwrap();
        assert!(plant.fan());
        assert!(fan.read_back().unwrap());
        fan.set(false).unwrap();
        assert!(!plant.fan());
        let mut heater = PwmActuator::new(SimHeaterPwm::new(plant.clone()));
        heater.set_percent(25.0).unwrap();
        assert_eq!(plant.heater(), 0.25);
    }
}
