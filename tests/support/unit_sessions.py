"""Client sessions of random unit conversions, for the PyPI Unit Converter server: the held-out
set the `traces` world model is tested and measured on (tests/servers/traces_world_model.rs,
scripts/measure-world-models.sh).

    python unit_sessions.py SESSIONS CALLS SEED

Prints a JSON list of SESSIONS sessions, each a list of CALLS calls ({"name", "arguments"}) for
tests/support/mcp_client.py's "sessions". Each call converts a value between a common pair of
units of one of five tools; no value is used twice. The same SEED gives the same sessions on
every machine (Python's Mersenne Twister is fixed by the language).
"""

import json
import random
import sys

PAIRS = {
    "convert_temperature": [
        ("celsius", "fahrenheit"),
        ("fahrenheit", "celsius"),
        ("celsius", "kelvin"),
        ("kelvin", "celsius"),
        ("fahrenheit", "kelvin"),
        ("kelvin", "fahrenheit"),
    ],
    "convert_length": [
        ("meter", "foot"),
        ("foot", "meter"),
        ("kilometer", "mile"),
        ("mile", "kilometer"),
        ("inch", "centimeter"),
        ("centimeter", "inch"),
    ],
    "convert_mass": [
        ("kilogram", "pound"),
        ("pound", "kilogram"),
        ("ounce", "gram"),
        ("gram", "ounce"),
    ],
    "convert_time": [
        ("hours", "minutes"),
        ("minutes", "seconds"),
        ("days", "hours"),
        ("seconds", "minutes"),
    ],
    "convert_speed": [
        ("kilometers per hour", "miles per hour"),
        ("miles per hour", "kilometers per hour"),
        ("meters per second", "kilometers per hour"),
        ("knots", "kilometers per hour"),
    ],
}


def sessions(count, calls, seed):
    draw = random.Random(seed)
    tools = sorted(PAIRS)
    used = set()
    out = []
    for _ in range(count):
        session = []
        for _ in range(calls):
            tool = draw.choice(tools)
            source, target = draw.choice(PAIRS[tool])
            # Two decimals, from -50 to 950, never twice.
            while True:
                cents = draw.randrange(100_000) - 5_000
                if cents not in used:
                    used.add(cents)
                    break
            session.append(
                {
                    "name": tool,
                    "arguments": {"value": cents / 100, "from_unit": source, "to_unit": target},
                }
            )
        out.append(session)
    return out


if __name__ == "__main__":
    count, calls, seed = (int(a) for a in sys.argv[1:4])
    print(json.dumps(sessions(count, calls, seed)))
