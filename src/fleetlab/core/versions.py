"""Installed package versions, as the banner, ``doctor``, the fidelity table and the bench report them."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version(package: str) -> str:
    """The installed version of ``package``, or ``"not installed"``."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"
