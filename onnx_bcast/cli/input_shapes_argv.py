"""The command line's words with one item per ``--input-shapes``: several items after one option, split."""

from __future__ import annotations

from collections.abc import Sequence


def _looks_like_shape(token: str) -> bool:
    """Whether a command-line word is meant as an ``--input-shapes`` item (``NAME:[...]``), valid or not."""
    return not token.startswith("-") and ":[" in token and token.endswith("]")


def _is_input_shapes_option(token: str) -> bool:
    """``--input-shapes``, ``--input-shapes=...``, or an abbreviation argparse accepts (``--input-s``)."""
    option = token.partition("=")[0]
    return len(option) > len("--input-") and "--input-shapes".startswith(option)


def split_input_shapes(argv: Sequence[str]) -> list[str]:
    """``--input-shapes A B MODEL`` as ``--input-shapes A --input-shapes B MODEL``: the option takes one item per
    occurrence, so that a positional argument after its items stays one (``nargs="+"`` swallows it); the items of one
    occurrence end at the first word that is not ``NAME:[...]`` (polygraphy's form of several items)."""
    words: list[str] = []
    expect_item = in_items = False
    for index, token in enumerate(argv):
        if token == "--":  # what follows is positional
            return words + list(argv[index:])
        if expect_item:  # the item of a bare --input-shapes, whatever it looks like
            expect_item, in_items = False, True
        elif in_items and _looks_like_shape(token):
            words.append("--input-shapes")
        elif _is_input_shapes_option(token):
            expect_item, in_items = "=" not in token, "=" in token
        else:
            in_items = False
        words.append(token)
    return words
