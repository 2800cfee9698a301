//! Tool box tests on the simulated board with a manual clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_hal::i2c::ErrorKind;
use glimmer_core::chat::schema::{ArgErrorKind, Param, ToolSchema};
use glimmer_core::chat::{Message, Out, Template};
use glimmer_core::proto::ErrorCode;

use super::*;
use crate::hal::clock::ManualClock;
use crate::hal::sim::PlantParams;
use crate::profiles::{self, ToolMapEntry};

struct Sim {
    tb: ToolBox,
    board: SimBoard,
    clock: ManualClock,
}

fn sim_with(config: ToolConfig, timeout_ms: u32) -> Sim {
    let mut entries: Vec<ToolMapEntry> = profiles::profile("sim").unwrap().tools.to_vec();
    for e in &mut entries {
        e.timeout_ms = timeout_ms;
    }
    let clock = ManualClock::new();
    let board = SimBoard::new(PlantParams::default(), Arc::new(clock.clone()));
    let tb = ToolBox::new(&entries, &board, Arc::new(clock.clone()), config).unwrap();
    Sim { tb, board, clock }
}

fn sim() -> Sim {
    sim_with(ToolConfig::default(), 500)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn celsius(tb: &ToolBox, zone: &str) -> f32 {
    let out = tb
        .invoke("read_temperature", &format!("{{\"zone\":\"{zone}\"}}"))
        .unwrap();
    let v = out
        .split("\"celsius\":")
        .nth(1)
        .unwrap()
        .trim_end_matches('}');
    v.parse().unwrap()
}

#[test]
fn sim_tools_have_schemas_core_parses_and_renders() {
    let s = sim();
    let names: Vec<&str> = s.tb.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_temperature",
            "set_fan",
            "set_heater",
            LIST_ZONES,
            GET_STATUS
        ]
    );
    for t in s.tb.tools() {
        let mut params = [Param::EMPTY; 4];
        let mut opts = [""; 8];
        let schema = ToolSchema::from_json(
            &t.name,
            &t.description,
            &t.parameters,
            &mut params,
            &mut opts,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", t.name));
        let mut buf = [0u8; 1024];
        let mut out = Out::new(&mut buf);
        schema.write_parameters_json(&mut out).unwrap();
        assert!(out.as_str().starts_with("{\"type\":\"object\""));
    }
    let heater = &s.tb.tools()[2];
    assert!(heater
        .parameters
        .contains("\"minimum\":0.0,\"maximum\":100.0"));
    let defs: Vec<_> = s.tb.tools().iter().map(ToolInfo::def).collect();
    let mut buf = vec![0u8; 8192];
    let mut out = Out::new(&mut buf);
    let chatml = Template::ChatMl(glimmer_core::chat::chatml::ChatMl::SMOLLM2);
    chatml
        .render(&[Message::user("hot?")], &defs, true, &mut out)
        .unwrap();
    assert!(out.as_str().contains("\"name\": \"set_heater\""));
}

#[test]
fn schema_failures_are_bad_tool_args() {
    let s = sim();
    let arg = |name: &str, args: &str| match s.tb.invoke(name, args) {
        Err(ToolError::BadToolArgs(BadArgs::Arg(e))) => e.kind,
        other => panic!("{name} {args}: {other:?}"),
    };
    assert_eq!(arg("set_fan", "{}"), ArgErrorKind::Missing);
    assert_eq!(arg("set_fan", r#"{"on":"maybe"}"#), ArgErrorKind::WrongType);
    assert_eq!(
        arg("set_fan", r#"{"on":true,"speed":3}"#),
        ArgErrorKind::Unknown
    );
    assert_eq!(
        arg("set_heater", r#"{"percent":"lots"}"#),
        ArgErrorKind::WrongType
    );
    assert_eq!(
        arg("read_temperature", r#"{"zone":"attic"}"#),
        ArgErrorKind::NotInEnum
    );
    let e = s.tb.invoke("set_fan", "{\"on\":").unwrap_err();
    assert!(matches!(e, ToolError::BadToolArgs(BadArgs::Json(_))));
    assert_eq!(e.code(), ErrorCode::BadToolArgs);
    let e = s.tb.invoke("self_destruct", "{}").unwrap_err();
    assert_eq!(
        (e, e.code()),
        (ToolError::UnknownTool, ErrorCode::UnknownTool)
    );
    // A text-coerced value is fine: "true" as a string, and empty args for no parameters.
    assert!(s.tb.invoke("set_fan", r#"{"on":"true"}"#).is_ok());
    assert!(s.tb.invoke(LIST_ZONES, "").is_ok());
}

#[test]
fn out_of_range_and_too_large_steps_are_refused_not_clamped() {
    let s = sim();
    let range = ToolError::ActuatorLimit(Limit::OutOfRange {
        min_milli: 0,
        max_milli: 100_000,
    });
    for bad in ["150", "-5", "100.01"] {
        let e = s.tb.invoke("set_heater", &format!("{{\"percent\":{bad}}}"));
        assert_eq!(e, Err(range), "{bad}");
    }
    assert_eq!(range.code(), ErrorCode::ActuatorLimit);
    let e = s.tb.invoke("set_heater", r#"{"percent":80}"#).unwrap_err();
    assert_eq!(
        e,
        ToolError::ActuatorLimit(Limit::StepTooLarge {
            max_step_milli: 50_000
        })
    );
    assert_eq!(s.board.plant().heater(), 0.0, "nothing was applied");
    assert!(e.to_string().contains("50"));
}

#[test]
fn rate_limit_counts_from_the_last_change() {
    let s = sim();
    // Start: fan on (safe). The first change is free.
    s.tb.invoke("set_fan", r#"{"on":false}"#).unwrap();
    assert!(!s.board.plant().fan());
    s.clock.advance(Duration::from_millis(500));
    let e = s.tb.invoke("set_fan", r#"{"on":true}"#).unwrap_err();
    assert_eq!(
        e,
        ToolError::ActuatorLimit(Limit::TooSoon { wait_ms: 1500 })
    );
    // Refreshing the same value is no change.
    assert!(s
        .tb
        .invoke("set_fan", r#"{"on":false}"#)
        .unwrap()
        .contains("\"changed\":false"));
    s.clock.advance(Duration::from_millis(1500));
    s.tb.invoke("set_fan", r#"{"on":true}"#).unwrap();
    assert!(s.board.plant().fan());
}

#[test]
fn dry_run_checks_and_reports_but_touches_nothing() {
    let s = sim();
    let out =
        s.tb.invoke("set_heater", r#"{"percent":40,"dry_run":true}"#)
            .unwrap();
    assert_eq!(
        out,
        r#"{"dry_run":true,"device":"heater","from":0,"to":40,"would_change":true}"#
    );
    assert_eq!(s.board.plant().heater(), 0.0);
    // Limits still apply in a dry run.
    let e =
        s.tb.invoke("set_heater", r#"{"percent":101,"dry_run":true}"#);
    assert!(matches!(e, Err(ToolError::ActuatorLimit(_))));
    // A dry run is no change for the rate limit either.
    s.tb.invoke("set_heater", r#"{"percent":40}"#).unwrap();
    assert_eq!(s.board.plant().heater(), 0.4);

    let dry = sim_with(
        ToolConfig {
            dry_run: true,
            ..ToolConfig::default()
        },
        500,
    );
    let out = dry.tb.invoke("set_fan", r#"{"on":false}"#).unwrap();
    assert!(out.starts_with("{\"dry_run\":true"), "{out}");
    assert!(dry.board.plant().fan());
}

#[test]
fn watchdog_returns_uncommanded_actuators_to_safe() {
    let s = sim();
    assert!(s.board.plant().fan(), "actuators start safe");
    s.tb.invoke("set_heater", r#"{"percent":50}"#).unwrap();
    s.tb.invoke("set_fan", r#"{"on":false}"#).unwrap();
    s.clock.advance(secs(29));
    assert_eq!(s.tb.service_watchdog(), 0);
    // A refresh restarts the heater's period.
    s.tb.invoke("set_heater", r#"{"percent":50}"#).unwrap();
    s.clock.advance(secs(29));
    assert_eq!(s.tb.service_watchdog(), 0);
    assert_eq!(s.board.plant().heater(), 0.5);
    s.clock.advance(secs(1));
    assert_eq!(s.tb.service_watchdog(), 1, "heater: 30 s since its refresh");
    assert_eq!(s.board.plant().heater(), 0.0);
    assert!(!s.board.plant().fan());
    s.clock.advance(secs(2));
    assert_eq!(s.tb.service_watchdog(), 1, "fan: 60 s since its command");
    assert!(s.board.plant().fan());
    assert_eq!(s.tb.service_watchdog(), 0, "already safe");
    let status = s.tb.invoke(GET_STATUS, "{}").unwrap();
    assert!(status.contains("\"device\":\"fan\",\"tool\":\"set_fan\",\"value\":true"));
    assert!(status.contains("\"watchdog_trips\":1"), "{status}");
}

#[test]
fn watchdog_thread_runs_on_real_time() {
    let tb = Arc::new(sim().tb);
    let handle = tb.spawn_watchdog(Duration::from_millis(5)).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    drop(handle);
}

#[test]
fn hung_bus_times_out_then_busy_then_recovers() {
    let s = sim_with(ToolConfig::default(), 300);
    s.board.faults().hang();
    let t0 = Instant::now();
    let e = s.tb.invoke("read_temperature", r#"{"zone":"cabinet"}"#);
    assert_eq!(e, Err(ToolError::ToolTimeout { after_ms: 300 }));
    assert_eq!(
        ToolError::ToolTimeout { after_ms: 300 }.code(),
        ErrorCode::ToolTimeout
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    let t1 = Instant::now();
    for _ in 0..20 {
        let e = s.tb.invoke("read_temperature", r#"{"zone":"cabinet"}"#);
        assert_eq!(e, Err(ToolError::Busy));
    }
    // Waiting out the timeout each time would take 6 s.
    assert!(t1.elapsed() < Duration::from_secs(1), "Busy is quick");
    assert_eq!(s.board.faults().hung(), 1, "one stuck call, no pile-up");
    // Other devices go on: the fan is not on the bus.
    s.tb.invoke("set_fan", r#"{"on":false}"#).unwrap();
    s.board.faults().release();
    let mut r = Err(ToolError::Busy);
    for _ in 0..200 {
        r = s.tb.invoke("read_temperature", r#"{"zone":"cabinet"}"#);
        if r != Err(ToolError::Busy) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(r.unwrap(), r#"{"zone":"cabinet","celsius":37}"#);
}

#[test]
fn i2c_error_is_tool_failed() {
    let s = sim();
    s.board.faults().fail_with(Some(ErrorKind::Bus));
    let e = s.tb.invoke("read_temperature", r#"{"zone":"ambient"}"#);
    assert_eq!(e, Err(ToolError::ToolFailed(HwError::I2c(ErrorKind::Bus))));
    assert_eq!(e.unwrap_err().code(), ErrorCode::ToolFailed);
    s.board.faults().fail_with(None);
    assert_eq!(celsius(&s.tb, "ambient"), 22.0);
}

#[test]
fn output_is_capped_with_a_marker() {
    let s = sim_with(
        ToolConfig {
            max_output_bytes: 40,
            ..ToolConfig::default()
        },
        500,
    );
    let out = s.tb.invoke(LIST_ZONES, "{}").unwrap();
    assert!(out.len() <= 40, "{out}");
    assert!(out.ends_with(TRUNCATED_MARKER));
    assert_eq!(out, "{\"zones\":[{\"zone\":\"cabinet…[truncated]");
    assert_eq!(cap_output("ééé".into(), 3), "é");
    assert_eq!(cap_output("short".into(), 5), "short");
}

#[test]
fn plant_responds_to_fan_and_heater() {
    let s = sim();
    // The plant starts at its fan-off equilibrium; the tool box switched the fan on.
    let t0 = celsius(&s.tb, "cabinet");
    assert_eq!(t0, 37.0);
    s.clock.advance(secs(60));
    let t1 = celsius(&s.tb, "cabinet");
    s.clock.advance(secs(240));
    let t2 = celsius(&s.tb, "cabinet");
    assert!(t0 > t1 && t1 > t2, "{t0} {t1} {t2}");
    assert!((t2 - 25.75).abs() < 0.2, "{t2}");
    s.tb.invoke("set_fan", r#"{"on":false}"#).unwrap();
    s.tb.invoke("set_heater", r#"{"percent":50}"#).unwrap();
    s.clock.advance(secs(10));
    s.tb.invoke("set_heater", r#"{"percent":50}"#).unwrap();
    s.clock.advance(secs(10));
    assert!(celsius(&s.tb, "cabinet") > t2 + 1.0);
    assert_eq!(celsius(&s.tb, "ambient"), 22.0);
}

#[test]
fn callable_from_many_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ToolBox>();
    let tb = Arc::new(sim().tb);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let tb = Arc::clone(&tb);
            std::thread::spawn(move || {
                for _ in 0..20 {
                    tb.invoke("read_temperature", r#"{"zone":"cabinet"}"#)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn bad_tool_maps_are_build_errors() {
    let base: Vec<ToolMapEntry> = profiles::profile("sim").unwrap().tools.to_vec();
    let clock: Arc<dyn crate::hal::clock::Clock> = Arc::new(ManualClock::new());
    let board = SimBoard::new(PlantParams::default(), Arc::clone(&clock));
    let build = |entries: &[ToolMapEntry]| {
        ToolBox::new(entries, &board, Arc::clone(&clock), ToolConfig::default())
            .err()
            .map(|e| e.problem)
    };
    let mut e = base.clone();
    e[3].limits = None;
    assert_eq!(build(&e), Some(Problem::BadLimits));
    let mut e = base.clone();
    e[2].limits.as_mut().unwrap().safe = 0.5;
    assert_eq!(build(&e), Some(Problem::BadLimits));
    let mut e = base.clone();
    e[1].name = "cabinet";
    assert_eq!(build(&e), Some(Problem::BadEntry));
    let mut e = base.clone();
    e[0].address = "0x80";
    assert_eq!(build(&e), Some(Problem::BadAddress));
    let mut e = base.clone();
    e[2].driver = "servo";
    assert_eq!(build(&e), Some(Problem::UnknownDriver));
    let mut e = base.clone();
    e[3].tool = "set_fan";
    assert_eq!(build(&e), Some(Problem::BadEntry));
    // The Linux board fails with a typed error when the device is absent.
    let mut e = base.clone();
    e[0].bus = "/dev/i2c-glimmer-absent";
    let err = ToolBox::new(&e[..1], &LinuxBoard, clock, ToolConfig::default()).unwrap_err();
    let expect = if cfg!(target_os = "linux") {
        crate::hal::OpenError::NotFound
    } else {
        crate::hal::OpenError::Unsupported
    };
    assert_eq!(err.problem, Problem::Open(expect));
    assert!(err.to_string().contains("cabinet"));
    assert!(
        ToolBox::from_profile(profiles::profile("sim").unwrap(), ToolConfig::default()).is_ok()
    );
}
