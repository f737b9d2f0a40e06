"""For property tests of the form "refused, or valid": proof that both branches ran.

A property that returns early on every refused example passes when *every* example is
refused, having checked nothing. `Outcomes` counts both branches across the run, and the
test fails unless hypothesis generated examples of each::

    outcomes = Outcomes()

    @PROPERTY
    @given(raw=st.text())
    def check(raw: str) -> None:
        try:
            entry = normalise(raw)
        except EntryError:
            outcomes.refused()
            return
        assert_valid(entry)
        outcomes.accepted()

    check()
    outcomes.assert_both()
"""

from __future__ import annotations

__all__ = ["Outcomes"]


class Outcomes:
    """How many examples a property accepted (and checked) and refused."""

    def __init__(self) -> None:
        self.accepted_count = 0
        self.refused_count = 0

    def accepted(self) -> None:
        self.accepted_count += 1

    def refused(self) -> None:
        self.refused_count += 1

    def assert_some_accepted(self) -> None:
        refused = self.refused_count
        assert self.accepted_count, f"no example was accepted ({refused} refused): nothing was checked"

    def assert_both(self) -> None:
        self.assert_some_accepted()
        accepted = self.accepted_count
        assert self.refused_count, f"no example was refused ({accepted} accepted): refusal went untested"
