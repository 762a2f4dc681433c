"""Packaging metadata: one version (Cargo.toml's), license files, cuDNN extras."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import cudnn_rs

ROOT = Path(__file__).resolve().parents[2]


def _cargo_version() -> str:
    return str(tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"])


def test_version_comes_from_cargo_toml() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert project["dynamic"] == ["version"]
    assert cudnn_rs.__version__ == _cargo_version()
    assert metadata.version("cudnn_rs") == _cargo_version()


def test_license_expression_and_files_are_shipped() -> None:
    meta = metadata.metadata("cudnn_rs")
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    assert sorted(meta.get_all("License-File") or []) == [
        "LICENSE-APACHE",
        "LICENSE-MIT",
    ]
    for name in ("LICENSE-MIT", "LICENSE-APACHE"):
        assert (ROOT / name).stat().st_size > 500, name


def test_cudnn_extras_pull_cudnn_9_14_or_newer() -> None:
    requires = metadata.requires("cudnn_rs") or []
    for extra in ("cu12", "cu13"):
        pulled = [r for r in requires if re.search(rf"extra == ['\"]{extra}['\"]", r)]
        assert pulled == [f"nvidia-cudnn-{extra}>=9.14 ; extra == '{extra}'"], requires


def test_changelog_has_a_section_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{_cargo_version()}]" in changelog
