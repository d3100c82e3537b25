"""The CLI's rich consoles: as wide as the terminal, and wide enough for whole table rows when the output
goes to a file or a pipe (rich would cut them to 80 columns)."""

from __future__ import annotations

from rich.console import Console, ConsoleDimensions

PIPED_WIDTH = 1000
"""The width of the CLI's output when it is not a terminal: no table is cut and no line is wrapped."""


class CliConsole(Console):
    """A rich ``Console`` whose width is ``PIPED_WIDTH`` when its file is not a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size, or ``PIPED_WIDTH`` columns when writing to a file or a pipe."""
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]
