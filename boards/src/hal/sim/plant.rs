//! The thermal zone model.
//!
//! The zone relaxes exponentially toward an equilibrium that depends on its inputs:
//! `T_eq = ambient + (load_rise + heater_rise · h) / (1 + fan_gain · fan)` with time
//! constant `tau / (1 + fan_gain · fan)`, where `h` is the heater level in 0..=1 and `fan`
//! is 0 or 1. Inputs are constant between changes, so each step is the exact solution
//! `T ← T_eq + (T − T_eq) · exp(−dt / tau_eff)`; the plant steps to "now" before every
//! read and every input change.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::hal::clock::Clock;

/// Constants of the thermal zone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlantParams {
    /// Temperature outside the zone, °C.
    pub ambient: f32,
    /// Rise above ambient from the appliance's own heat, fan off, °C.
    pub load_rise: f32,
    /// Extra rise from the heater at 100 %, fan off, °C.
    pub heater_rise: f32,
    /// How much the fan raises the zone's heat conductance (1 + gain times).
    pub fan_gain: f32,
    /// Time constant with the fan off.
    pub tau: Duration,
    /// Starting temperature, °C.
    pub initial: f32,
}

impl Default for PlantParams {
    /// A cabinet at 22 °C ambient that runs at 37 °C with the fan off and 25.75 °C with it
    /// on, with a two-minute time constant.
    fn default() -> Self {
        PlantParams {
            ambient: 22.0,
            load_rise: 15.0,
            heater_rise: 20.0,
            fan_gain: 3.0,
            tau: Duration::from_secs(120),
            initial: 37.0,
        }
    }
}

#[derive(Debug)]
struct State {
    temp: f32,
    at: Duration,
    fan: bool,
    heater: f32,
}

/// A simulated thermal zone; clones share it.
#[derive(Clone)]
pub struct Plant {
    params: PlantParams,
    clock: Arc<dyn Clock>,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Plant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plant")
            .field("params", &self.params)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Plant {
    /// A zone at `params.initial`, fan off, heater at 0 %, on `clock`.
    pub fn new(params: PlantParams, clock: Arc<dyn Clock>) -> Self {
        let at = clock.now();
        let state = State {
            temp: params.initial,
            at,
            fan: false,
            heater: 0.0,
        };
        Plant {
            params,
            clock,
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The constants.
    pub fn params(&self) -> PlantParams {
        self.params
    }

    /// The zone temperature now, °C.
    pub fn temperature(&self) -> f32 {
        self.stepped().temp
    }

    /// The ambient temperature, °C.
    pub fn ambient(&self) -> f32 {
        self.params.ambient
    }

    /// Whether the fan runs.
    pub fn fan(&self) -> bool {
        self.stepped().fan
    }

    /// The heater level, 0..=1.
    pub fn heater(&self) -> f32 {
        self.stepped().heater
    }

    /// Runs or stops the fan from now on.
    pub fn set_fan(&self, on: bool) {
        self.stepped().fan = on;
    }

    /// Sets the heater level (clamped to 0..=1: it is a physical quantity here; the
    /// limits that refuse out-of-range commands live in the tools).
    pub fn set_heater(&self, level: f32) {
        let level = if level.is_nan() { 0.0 } else { level };
        self.stepped().heater = level.clamp(0.0, 1.0);
    }

    /// Where the zone settles with the present inputs, °C.
    pub fn equilibrium(&self) -> f32 {
        let s = self.stepped();
        self.eq_and_tau(&s).0
    }

    fn eq_and_tau(&self, s: &State) -> (f32, f32) {
        let p = &self.params;
        let k = 1.0 + if s.fan { p.fan_gain } else { 0.0 };
        let eq = p.ambient + (p.load_rise + p.heater_rise * s.heater) / k;
        (eq, p.tau.as_secs_f32() / k)
    }

    /// The state, advanced to the clock's now.
    fn stepped(&self) -> MutexGuard<'_, State> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.clock.now();
        let dt = now.saturating_sub(s.at).as_secs_f32();
        if dt > 0.0 {
            let (eq, tau) = self.eq_and_tau(&s);
            let decay = if tau > 0.0 { (-dt / tau).exp() } else { 0.0 };
            s.temp = eq + (s.temp - eq) * decay;
            s.at = now;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hal::clock::ManualClock;

    #[test]
    fn fan_cools_heater_warms_with_the_time_constant() {
        let clock = ManualClock::new();
        let plant = Plant::new(PlantParams::default(), Arc::new(clock.clone()));
        assert_eq!(plant.temperature(), 37.0);
        clock.advance(Duration::from_secs(600));
        assert_eq!(
            plant.temperature(),
            37.0,
            "fan off is the starting equilibrium"
        );

        plant.set_fan(true);
        assert_eq!(plant.equilibrium(), 25.75);
        // One effective time constant (120 s / 4) closes 1 − 1/e of the gap.
        clock.advance(Duration::from_secs(30));
        let expect = 25.75 + (37.0 - 25.75) * (-1.0f32).exp();
        assert!((plant.temperature() - expect).abs() < 1e-3);
        clock.advance(Duration::from_secs(600));
        assert!((plant.temperature() - 25.75).abs() < 1e-3);

        plant.set_fan(false);
        plant.set_heater(0.5);
        assert_eq!(plant.equilibrium(), 47.0);
        clock.advance(Duration::from_secs(120 * 10));
        assert!((plant.temperature() - 47.0).abs() < 1e-2);
        plant.set_heater(7.0);
        assert_eq!(plant.heater(), 1.0);
    }
}
