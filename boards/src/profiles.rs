//! Board profiles: the memory budget, bandwidth, default backend and tool map of each board
//! Glimmer ships for, as data.
//!
//! Budgets follow `GLIMMER.md`'s rule for a 32 GB device (weights ≤ 16 GB, KV ≤ 4 GB,
//! arena ≤ 2 GB, the rest for the OS), scaled to each board's memory; bandwidths come from its
//! hardware table ("decode is memory-bound: tok/s ≈ bandwidth ÷ bytes per token"). Every
//! profile's `budget.total` is its memory less its OS reserve.

use glimmer_core::plan::Budget;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// One device the board exposes to the model, the driver and bus behind it, and (for
/// actuators) its limits. [`crate::tools::ToolBox`] turns a profile's entries into tools.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolMapEntry {
    /// Tool name as the model calls it; sensors sharing one name become one tool with a
    /// `zone` parameter.
    pub tool: &'static str,
    /// Device name: the zone of a sensor, or the actuator (`fan`, `heater`).
    pub name: &'static str,
    /// What the device is, for the model.
    pub description: &'static str,
    /// Driver that implements it: `tmp102`, `relay` or `pwm`.
    pub driver: &'static str,
    /// Bus the driver talks on: `sim`, or a device path (`/dev/i2c-1`, `/dev/gpiochip0`,
    /// `/sys/class/pwm/pwmchip0`).
    pub bus: &'static str,
    /// Address on that bus: an I2C address (`0x48`), a GPIO line or a PWM channel number.
    pub address: &'static str,
    /// Longest a call may take before it fails with a timeout, in milliseconds.
    pub timeout_ms: u32,
    /// Limits of an actuator; `None` for sensors.
    pub limits: Option<ActuatorLimits>,
}

/// Range, rate, safe state and watchdog of one actuator. A switch uses 0 (off) and 1 (on).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActuatorLimits {
    /// Smallest value accepted.
    pub min: f32,
    /// Largest value accepted.
    pub max: f32,
    /// Shortest time between two changes of value, in milliseconds (0: no limit).
    pub min_interval_ms: u32,
    /// Largest change one command may make (`None`: any step within the range).
    pub max_step: Option<f32>,
    /// The value the actuator returns to when the watchdog fires, and starts at.
    pub safe: f32,
    /// The actuator returns to `safe` when not commanded for this long, in milliseconds
    /// (0: no watchdog).
    pub watchdog_ms: u32,
}

/// A board Glimmer runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoardProfile {
    /// Name used on the command line (`--board`).
    pub name: &'static str,
    /// One line about the board.
    pub description: &'static str,
    /// Memory the board has (unified on Jetson and Apple).
    pub memory_bytes: u64,
    /// Memory left to the OS and everything else.
    pub os_reserve_bytes: u64,
    /// What a model may take.
    pub budget: Budget,
    /// Memory bandwidth in GB/s (10⁹ bytes a second).
    pub bandwidth_gbs: f32,
    /// Backend used unless asked otherwise: `cpu`, `cuda` or `wgpu`.
    pub default_backend: &'static str,
    /// Tools and their drivers.
    pub tools: &'static [ToolMapEntry],
}

/// The simulated thermal zone of the `sim` board: a TMP102 in the cabinet and one outside
/// it on the simulated I2C bus, a fan relay and a PWM heater.
const SIM_TOOLS: &[ToolMapEntry] = &[
    ToolMapEntry {
        tool: "read_temperature",
        name: "cabinet",
        description: "the cabinet the appliance sits in",
        driver: "tmp102",
        bus: "sim",
        address: "0x48",
        timeout_ms: 500,
        limits: None,
    },
    ToolMapEntry {
        tool: "read_temperature",
        name: "ambient",
        description: "the air outside the cabinet",
        driver: "tmp102",
        bus: "sim",
        address: "0x49",
        timeout_ms: 500,
        limits: None,
    },
    ToolMapEntry {
        tool: "set_fan",
        name: "fan",
        description: "the cabinet fan (cools the cabinet)",
        driver: "relay",
        bus: "sim",
        address: "0",
        timeout_ms: 500,
        // On is safe for a thermal zone.
        limits: Some(ActuatorLimits {
            min: 0.0,
            max: 1.0,
            min_interval_ms: 2_000,
            max_step: None,
            safe: 1.0,
            watchdog_ms: 60_000,
        }),
    },
    ToolMapEntry {
        tool: "set_heater",
        name: "heater",
        description: "the cabinet heater, in percent of full power",
        driver: "pwm",
        bus: "sim",
        address: "0",
        timeout_ms: 500,
        limits: Some(ActuatorLimits {
            min: 0.0,
            max: 100.0,
            min_interval_ms: 1_000,
            max_step: Some(50.0),
            safe: 0.0,
            watchdog_ms: 30_000,
        }),
    },
];

/// Every shipped profile; the first, `sim`, is the default.
pub const PROFILES: &[BoardProfile] = &[
    // sim: a roomy host-side simulation, 16 GiB for the model, so any test model fits.
    BoardProfile {
        name: "sim",
        description: "simulated board on the host (default): roomy budget, simulated tools",
        memory_bytes: 32 * GIB,
        os_reserve_bytes: 16 * GIB,
        budget: Budget {
            weights: 12 * GIB,
            kv: 4 * GIB,
            arena: 2 * GIB,
            total: 16 * GIB,
        },
        bandwidth_gbs: 75.0,
        default_backend: "cpu",
        tools: SIM_TOOLS,
    },
    // GLIMMER.md: Jetson AGX Orin 64 GB, ~205–275 GB/s (the low end is planned for).
    BoardProfile {
        name: "jetson-agx-orin-64g",
        description: "NVIDIA Jetson AGX Orin, 64 GB unified LPDDR5",
        memory_bytes: 64 * GIB,
        os_reserve_bytes: 6 * GIB,
        budget: Budget {
            weights: 40 * GIB,
            kv: 16 * GIB,
            arena: 2 * GIB,
            total: 58 * GIB,
        },
        bandwidth_gbs: 205.0,
        default_backend: "cuda",
        tools: &[],
    },
    // Jetson Orin Nano 8 GB: 68 GB/s (NVIDIA's figure; not in GLIMMER.md's table).
    BoardProfile {
        name: "jetson-orin-nano-8g",
        description: "NVIDIA Jetson Orin Nano, 8 GB unified LPDDR5",
        memory_bytes: 8 * GIB,
        os_reserve_bytes: 2 * GIB,
        budget: Budget {
            weights: 4 * GIB,
            kv: 1536 * MIB,
            arena: 512 * MIB,
            total: 6 * GIB,
        },
        bandwidth_gbs: 68.0,
        default_backend: "cuda",
        tools: &[],
    },
    // GLIMMER.md: Apple M3 Max 128 GB, ~400 GB/s, INT4.
    BoardProfile {
        name: "apple-m3-max-128g",
        description: "Apple M3 Max, 128 GB unified memory",
        memory_bytes: 128 * GIB,
        os_reserve_bytes: 28 * GIB,
        budget: Budget {
            weights: 64 * GIB,
            kv: 32 * GIB,
            arena: 4 * GIB,
            total: 100 * GIB,
        },
        bandwidth_gbs: 400.0,
        default_backend: "wgpu",
        tools: &[],
    },
    // GLIMMER.md: x86 laptop LPDDR5, ~75 GB/s; the 32 GB budget example verbatim
    // (weights ≤ 16, KV ≤ 4, arena ≤ 2, 10 left for the OS).
    BoardProfile {
        name: "linux-x86",
        description: "x86-64 Linux machine with 32 GB (laptop LPDDR5 class)",
        memory_bytes: 32 * GIB,
        os_reserve_bytes: 10 * GIB,
        budget: Budget {
            weights: 16 * GIB,
            kv: 4 * GIB,
            arena: 2 * GIB,
            total: 22 * GIB,
        },
        bandwidth_gbs: 75.0,
        default_backend: "cpu",
        tools: &[],
    },
];

/// The profile called `name`.
pub fn profile(name: &str) -> Option<&'static BoardProfile> {
    PROFILES.iter().find(|p| p.name == name)
}

/// Names of every profile, for help and error messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    PROFILES.iter().map(|p| p.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_fit_memory_and_parts_fit_total() {
        for p in PROFILES {
            let b = p.budget;
            assert_eq!(b.total + p.os_reserve_bytes, p.memory_bytes, "{}", p.name);
            for part in [b.weights, b.kv, b.arena] {
                assert!(part <= b.total, "{}", p.name);
            }
            assert!(matches!(p.default_backend, "cpu" | "cuda" | "wgpu"));
            assert!(p.bandwidth_gbs > 0.0);
            for t in p.tools {
                if let Some(l) = t.limits {
                    assert!(l.min <= l.safe && l.safe <= l.max, "{}", t.name);
                }
            }
        }
    }

    #[test]
    fn lookup_by_name() {
        assert_eq!(PROFILES[0].name, "sim");
        assert_eq!(profile("linux-x86").unwrap().budget.weights, 16 * GIB);
        assert_eq!(
            profile("jetson-orin-nano-8g").unwrap().budget.kv,
            1536 * MIB
        );
        assert!(profile("nope").is_none());
        let mut all: Vec<_> = names().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), PROFILES.len());
    }
}
