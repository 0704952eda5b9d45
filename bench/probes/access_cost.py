"""What Cloudflare Access costs a chat request: workerd's CPU per short streamed chat with no
Access, and with Access on and a valid RS256 token (parsed and checked in Python, the signature
verified by crypto.subtle with the key imported for each request). The team's keys come from
tests/access_certs.py's local certs server. Starts the launcher itself, once per case.

.venv/bin/python bench/probes/access_cost.py [requests]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from access_certs import AUD, CertsServer, Key, claims, token
from budget_cost import run

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    team = CertsServer([Key("k1")])
    on = {"ACCESS_TEAM_DOMAIN": team.team, "ACCESS_AUD": AUD}
    header = {"cf-access-jwt-assertion": token(team.keys[0], claims(team.team))}
    try:
        for name, extra, headers in (
            ("no Access", {}, {}),
            ("Access", on, header),
            ("no Access", {}, {}),
            ("Access", on, header),
        ):
            rounds = run(None, n, extra, headers)
            print(
                f"{name:10} ms of workerd CPU per chat: median {statistics.median(rounds):.2f}"
                f" (rounds {', '.join(f'{r:.2f}' for r in rounds)})",
                flush=True,
            )
    finally:
        team.stop()
