"""Where the repository and the test folder are, for tests in any subfolder."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
