"""The `sandmle` command: every command has help; doctor reports; errors are one line."""

from __future__ import annotations

import subprocess
import sys

import click

from conftest import ROOT


def _walk(cmd: click.Command, path=()):
    yield path, cmd
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            yield from _walk(cmd.get_command(ctx, name), path + (name,))


def test_every_command_has_help(run_cli):
    from workbench.cli import cli

    seen = 0
    for path, cmd in _walk(cli):
        assert (cmd.help or "").strip(), f"`sandmle {' '.join(path)}` has no help text"
        res = run_cli(*path, "--help")
        assert res.code == 0 and "Usage:" in res.out, path
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.help, f"option {param.opts} of `sandmle {' '.join(path)}` has no help"
        seen += 1
    assert seen >= 8


def test_doctor_json(run_cli):
    res = run_cli("doctor", "--json")
    checks = {c["name"]: c for c in res.json()}
    assert checks["python"]["ok"] is True
    assert "training device: cpu" in checks["torch"]["detail"] or "cuda" in checks["torch"]["detail"]
    assert "schema v" in checks["store"]["detail"]
    assert "docker daemon" in checks and "ray" in checks and "anthropic key" in checks
    # vLLM is optional: found (make vllm's .venv-vllm, [vllm] command, SANDMLE_VLLM_COMMAND or PATH) with its
    # command and version, or missing with the way to get it
    vllm = checks["vllm"]
    assert vllm["optional"] and (" serve (" in vllm["detail"] if vllm["ok"] else "make vllm" in vllm["fix"])


def test_doctor_names_the_vllm_command_the_setting_or_variable_chose(run_cli, home, monkeypatch):
    monkeypatch.delenv("SANDMLE_VLLM_COMMAND", raising=False)
    (home / "config.toml").write_text('[vllm]\ncommand = "/opt/wrap/vllm-in-a-box serve"\n')
    vllm = {c["name"]: c for c in run_cli("doctor", "--json").json()}["vllm"]
    assert vllm["ok"] and vllm["detail"] == "version unknown: /opt/wrap/vllm-in-a-box serve ([vllm] command)"
    monkeypatch.setenv("SANDMLE_VLLM_COMMAND", "docker run vllm serve")
    vllm = {c["name"]: c for c in run_cli("doctor", "--json").json()}["vllm"]
    assert vllm["detail"] == "version unknown: docker run vllm serve (SANDMLE_VLLM_COMMAND)"


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "workbench", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "seeds" in out.stdout


def test_bench_sampler_option_is_for_bench_learn_only(run_cli):
    res = run_cli("bench", "train", "--sampler", "vllm")
    assert res.code == 2 and "--sampler goes with `bench learn`" in res.err
