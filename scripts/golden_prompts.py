"""Prompt texts for the golden fixtures (see gen_golden.py).

All texts were written for this project. The generator copies every text into the
fixture JSON, so the Rust tests never read this file.
"""

SHORT = "The quick brown fox jumps over the lazy dog."

MULTILINE = (
    "Shopping list:\n"
    "  - flour (2 kg)\n"
    "  - eggs\n"
    "\n"
    "\tNotes:\n"
    "\t\tbuy the cheaper brand\n"
    "\n"
    "\n"
    "End of list.   \n"
)

UNICODE = (
    "Café crème, naïve façade, Größe, señor, Ærøskøbing, Ελληνικά, русский.\n"
    "日本語の文章と中文的句子混在しています。한국어도 조금.\n"
    "Emoji: 🌡️🔥❄️ 👩‍💻 🇫🇷 ✓ → ∑ ≈ ½"
)

CODE = (
    "fn checked_area(w: u32, h: u32) -> Option<u32> {\n"
    "    // Both sides come from the file header; never trust them.\n"
    "    let area = w.checked_mul(h)?;\n"
    "    if area == 0 { return None; }\n"
    "    Some(area)\n"
    "}\n"
    "\n"
    "#[test]\n"
    "fn overflow_is_none() {\n"
    "    assert_eq!(checked_area(u32::MAX, 2), None);\n"
    "}\n"
)

NUMBERS = (
    "Arithmetic check: 17 * 23 = 391; 391 + 1024 = 1415; 1415 / 5 = 283.\n"
    "Pi is about 3.14159265, e is about 2.71828. The year 2024 had 366 days.\n"
    "Temperatures: -40.5, 0, +12.75, 1e-3, 6.02e23. Phone 555-0199, ID #00042.\n"
    "What is 12345 + 67890?"
)

WHITESPACE = "   leading spaces,\t\ttabs,  double  spaces,\n\n\nblank lines and trailing   "

SMOL_CHAT = (
    "<|im_start|>system\nYou are a concise assistant.<|im_end|>\n"
    "<|im_start|>user\nWhy does a metal spoon feel colder than a wooden one?<|im_end|>\n"
    "<|im_start|>assistant\n"
)

SMOL_TOOL = (
    "<|im_start|>system\n"
    "You can call tools. Available tools:\n"
    '[{"name": "read_temperature", "description": "Read a zone sensor in degrees Celsius.", '
    '"parameters": {"type": "object", "properties": {"zone": {"type": "integer"}}, '
    '"required": ["zone"]}}]\n'
    'To call a tool, answer with <tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
    "<|im_end|>\n"
    "<|im_start|>user\nWhat is the temperature in zone 3?<|im_end|>\n"
    "<|im_start|>assistant\n"
)

GEMMA_CHAT = (
    "<start_of_turn>user\n"
    "Why does a metal spoon feel colder than a wooden one?<end_of_turn>\n"
    "<start_of_turn>model\n"
)

GEMMA_TOOL = (
    "<start_of_turn>user\n"
    "You can call tools. Available tools:\n"
    '[{"name": "read_temperature", "description": "Read a zone sensor in degrees Celsius.", '
    '"parameters": {"type": "object", "properties": {"zone": {"type": "integer"}}, '
    '"required": ["zone"]}}]\n'
    'To call a tool, answer only with ```tool_code\n{"name": ..., "arguments": {...}}\n```\n'
    "\n"
    "What is the temperature in zone 3?<end_of_turn>\n"
    "<start_of_turn>model\n"
)

# A long technical narrative, written for these fixtures. It has to reach well past
# 600 tokens for both tokenizers: Gemma 3 270M uses a sliding window of 512.
LONG = """Commissioning log for the thermal zone controller of the east curing hall.

The east curing hall holds four kilns side by side, and each kiln is one thermal zone. Every zone has a resistive heater bank rated at thirty-six kilowatts, split into three stages of twelve kilowatts that are switched by solid-state relays, a circulation fan driven by a small variable-frequency drive, and two platinum resistance sensors: one mounted in the supply air duct and one buried in a dummy load that behaves roughly like the parts being cured. The controller is a single board with a dual-core microcontroller, a watchdog that must be fed every two hundred milliseconds, and an isolated RS-485 link to the plant supervisor.

On the first day we checked the wiring. Zone two had its sensors swapped, so the supply air reading lagged far behind the heater command while the load reading jumped almost immediately. Swapping the connectors fixed it, and we added a plausibility rule: if the load sensor ever rises faster than the supply sensor for more than thirty seconds, the zone raises a wiring fault and refuses to heat.

The control loop runs at ten hertz. Each cycle it reads both sensors, rejects any sample outside minus twenty to three hundred and fifty degrees Celsius, and filters the rest with a short moving median to remove spikes from the relay switching. A cascade structure then does the real work. The outer loop compares the load temperature with the recipe setpoint and asks for a supply air temperature; the inner loop compares that request with the measured supply air and decides how many heater stages to enable and at what duty cycle. The outer loop is slow and gentle because the parts crack if their surface heats more than four degrees per minute. The inner loop is fast, but it is clamped so that the supply air never exceeds the load setpoint by more than forty degrees.

Recipes are stored as lists of segments. A segment is either a ramp, with a target temperature and a rate, or a soak, with a duration. The curing recipe for the large housings has seven segments: ramp to sixty degrees at three degrees per minute, soak for twenty minutes to drive out moisture, ramp to one hundred and forty degrees at two degrees per minute, soak for ninety minutes, ramp down to eighty at one degree per minute, soak for ten minutes, and finally release the zone to cool naturally. The controller checks every recipe before it starts: rates must be positive, targets must lie inside the zone limits, and the total duration must fit in the twelve-hour shift.

Safety does not depend on the software. Each heater bank has a mechanical thermostat set to three hundred degrees that cuts the contactor coil directly, and the fan has an airflow switch; without airflow the heaters cannot be energized. In software, the safe state is simple: all stages off, fan at full speed until the supply air falls below fifty degrees, then fan off. The controller enters the safe state on a sensor fault, a wiring fault, a missed watchdog, a lost link to the supervisor for longer than five seconds during a ramp, or an operator stop.

During the second week we tuned the loops. With the first gains, zone four overshot the soak temperature by six degrees, because its door seal leaked and the fan pulled in cold air that confused the supply sensor. After the seal was replaced the overshoot fell below one degree, and the energy used per batch dropped by about eleven percent. We logged every cycle to a ring buffer of one hour, which the supervisor reads after each batch, and we kept the old logs so that the next team can see why the gains are what they are."""
