"""Reductions over a row of `lanes` consecutive work-items: a sub-group's collective where the row is
the sub-group, butterfly shuffles where it is a slice of one, a tree in local memory elsewhere."""

from __future__ import annotations


class LaneReductions:
    """The dialect's reduction statements (self.subgroups, self.target and self.barrier_stmt come
    from the dialect)."""

    def subgroup_sum(self, x: str) -> str:
        raise NotImplementedError

    def lanes_sum(self, var: str, scratch: str, lid: str, lanes: int, every_lane: bool = False) -> str:
        """Statements leaving in `var` of lane 0 of each `lanes`-wide row the row's sum (every_lane:
        in every lane of the row). Every work-item must reach them (the fallback has barriers).
        Sub-groups where the device has them (every lane gets the result); otherwise a tree in
        local memory (`scratch`, one float per work-item)."""
        if self.subgroups:
            return f"{var} = {self.subgroup_sum(var)};"
        return (
            f"/* no sub-groups: a tree over the row's {lanes} lanes in local memory */\n"
            f"{scratch}[{lid}] = {var};\n{self.barrier_stmt}\n"
            f"for (uint s = {lanes // 2}u; s > 0u; s >>= 1) {{\n"
            f"    if ({lid} % {lanes}u < s) {scratch}[{lid}] += {scratch}[{lid} + s];\n"
            f"    {self.barrier_stmt}\n}}\n"
            f"{self._tree_result(var, scratch, lid, lanes, every_lane)}\n{self.barrier_stmt}"
        )

    @staticmethod
    def _tree_result(var: str, scratch: str, lid: str, lanes: int, every_lane: bool) -> str:
        """The read of a local-memory tree's result: its own slot (lane 0 holds the row's), or
        (every_lane) the row's lane 0 slot, read by all before the barrier that follows."""
        if not every_lane:
            return f"{var} = {scratch}[{lid}];"
        return f"{var} = {scratch}[{lid} - {lid} % {lanes}u];  /* the row's result, in every lane */"

    def subgroup_max(self, x: str) -> str:
        raise NotImplementedError

    def lanes_max(self, var: str, scratch: str, lid: str, lanes: int, every_lane: bool = False) -> str:
        """lanes_sum's maximum: `var` of lane 0 of each `lanes`-wide row (every_lane: of every lane)
        gets the row's largest value (a NaN wins in the local-memory tree, not in a sub-group's
        maximum; the quantizers refuse non-finite input)."""
        if self.subgroups:
            return f"{var} = {self.subgroup_max(var)};"
        return self.local_lanes_max(var, scratch, lid, lanes, every_lane, why="no sub-groups: ")

    def local_lanes_max(self, var: str, scratch: str, lid: str, lanes: int, every_lane: bool = False,
                        why: str = "") -> str:  # fmt: skip
        """lanes_max through local memory on any target, for rows of any power-of-two width."""
        return (
            f"/* {why}a tree over the row's {lanes} lanes in local memory */\n"
            f"{scratch}[{lid}] = {var};\n{self.barrier_stmt}\n"
            f"for (uint s = {lanes // 2}u; s > 0u; s >>= 1) {{\n"
            f"    if ({lid} % {lanes}u < s) {{\n"
            f"        const float o = {scratch}[{lid} + s];\n"
            f"        {scratch}[{lid}] = o > {scratch}[{lid}] || o != o ? o : {scratch}[{lid}];\n"
            f"    }}\n    {self.barrier_stmt}\n}}\n"
            f"{self._tree_result(var, scratch, lid, lanes, every_lane)}\n{self.barrier_stmt}"
        )

    def shuffle_xor(self, x: str, mask: str) -> str | None:
        """float x of the lane whose sub-group lane id is this one's xor mask (None: not spelled here)."""
        return None

    def row_max_subgroup(self, lanes: int) -> int | None:
        """The sub-group size row_max needs the kernel to run with, or None where it takes the tree."""
        size = self.target.subgroup_size
        if size and (lanes == size or lanes < size and self.shuffle_xor("x", "1") is not None):
            return size
        return None

    def row_max(self, var: str, scratch: str, lid: str, lanes: int) -> str:
        """float var (>= 0) of every lane of each `lanes`-wide row gets the row's largest: the sub-group's
        maximum (row_max_subgroup), butterfly shuffles within a slice of it (rows start at multiples of
        lanes, so lane ^ o stays in the row), or the local-memory tree. Every work-item of the
        work-group must reach it. A NaN may lose in the first two, and a sub-group's maximum with a NaN
        in it may drop a larger value: callers check their own values against the result."""
        if self.row_max_subgroup(lanes) is None:
            return self.local_lanes_max(var, scratch, lid, lanes, every_lane=True)
        if lanes == self.target.subgroup_size:
            return f"/* the row is the sub-group */\n{var} = {self.subgroup_max(var)};"
        return (f"/* butterfly shuffles over the row's {lanes} lanes of the sub-group */\n"
                f"for (uint o = {lanes // 2}u; o > 0u; o >>= 1) {{\n"
                f"    const float other = {self.shuffle_xor(var, 'o')};\n"
                f"    {var} = other > {var} ? other : {var};\n}}")  # fmt: skip
