"""Tests of the ``autoacct`` command (autoacct.cli).

A few runs go through a subprocess (``python -m autoacct``, ``python -m
autoacct.cli`` and the console script when installed); the many bad-input cases call ``main`` in process,
which is the same code without the interpreter start-up.
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import threading

import pytest

import autoacct.calibrators as calibrators
import autoacct.cli as cli
from autoacct.calibrators import calibrate_dpsgd, calibrate_gaussian
from autoacct.cli import main
from autoacct.dpsgd import dpsgd
from autoacct.exactness import bound_text
from autoacct.mechanism import Mechanism
from autoacct.zoo import Composition, Gaussian, PoissonSubsample

# Small runs, so that the tests stay fast.
SMALL = ["--sample-rate", "0.1", "--noise-multiplier", "2.0", "--steps", "10", "--delta", "1e-5"]


def run_cli(*args: str, module: str = "autoacct.cli") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, timeout=300)


def run_main(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits for usage errors and --help
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def test_epsilon_json_matches_library():
    res = run_cli("epsilon", *SMALL, "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert {"epsilon", "epsilon_lower", "epsilon_rdp", "sample_rate", "noise_multiplier", "steps",
            "delta", "sampling"} <= data.keys()
    mech = dpsgd(0.1, 2.0, 10)
    lower, upper = mech.epsilon_bounds(1e-5)
    assert data["epsilon"] == pytest.approx(mech.epsilon(1e-5), rel=1e-12)
    assert data["epsilon"] == pytest.approx(upper, rel=1e-12)
    assert data["epsilon_lower"] == pytest.approx(lower, rel=1e-12)
    assert data["epsilon_rdp"] == pytest.approx(mech.epsilon(1e-5, via="rdp"), rel=1e-12)
    assert data["epsilon_lower"] <= data["epsilon"] <= data["epsilon_rdp"]
    assert (data["sample_rate"], data["noise_multiplier"], data["steps"]) == (0.1, 2.0, 10)


def test_epsilon_text_and_dataset_form(capsys):
    argv = ["epsilon", "--dataset-size", "1000", "--batch-size", "500", "--epochs", "2",
            "--noise-multiplier", "3", "--sampling", "without-replacement", "--delta", "1e-6",
            "--json"]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    data = json.loads(out)
    mech = dpsgd(noise_multiplier=3.0, dataset_size=1000, batch_size=500, epochs=2,
                 sampling="without-replacement")
    assert data["epsilon"] == pytest.approx(mech.epsilon(1e-6), rel=1e-12)
    assert data["neighboring"] == "replace-one"
    # 4 steps: the lower end is that of the pair a fixed pair of datasets attains at every
    # step, PoissonSubsample(0.5)(Gaussian(3 / 2)), not the composed dominating pair's.
    attained = Composition()([PoissonSubsample(0.5)(Gaussian(1.5))], [4]).epsilon_bounds(1e-6)
    assert attained[0] * (1 - 1e-9) <= data["epsilon_lower"] <= attained[1]
    code, out, err = run_main(argv[:-1], capsys)
    assert code == 0 and bound_text(mech.epsilon(1e-6), True) in out and "RDP" in out


TF_PRIVACY = ["--N", "60000", "--batch_size", "256", "--epochs", "2.5", "--noise_multiplier", "1.1",
              "--delta", "1e-5"]


def test_tf_privacy_flag_names_and_fractional_epochs(capsys):
    # TF Privacy's compute_dp_sgd_privacy flags, with its --flag=value form too.
    code, out, err = run_main(["epsilon", *TF_PRIVACY, "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    # K = ceil(E ceil(N / B)) = ceil(2.5 x 235) = 588 at q = B / N
    assert (data["sample_rate"], data["steps"]) == (256 / 60000, 588)
    assert data["epochs"] == 2.5 and data["dataset_size"] == 60000 and data["batch_size"] == 256
    assert data["steps_rule"] == "K = ceil(E ceil(N / B)) = ceil(2.5 x 235) = 588"
    assert data["other_tools"] == {"tf_privacy": {"sample_rate": 256 / 60000, "steps": 586},
                                   "opacus": {"sample_rate": 1 / 235, "steps": 587}}
    assert data["epsilon"] == pytest.approx(dpsgd(256 / 60000, 1.1, 588).epsilon(1e-5), rel=1e-12)
    code, out2, err = run_main(["epsilon", *[f"{TF_PRIVACY[i]}={TF_PRIVACY[i + 1]}"
                                             for i in range(0, len(TF_PRIVACY), 2)], "--json"],
                               capsys)
    assert code == 0, err
    assert json.loads(out2) == data


def test_text_states_q_k_their_rules_and_other_tools_counts(capsys):
    code, out, err = run_main(["epsilon", *TF_PRIVACY], capsys)
    assert code == 0, err
    assert "q = B / N = 256 / 60000 = 0.00426667" in out
    assert "K = ceil(E ceil(N / B)) = ceil(2.5 x 235) = 588" in out
    assert "2.5 epochs are 587.5 steps, rounded up" in out
    assert "K = ceil(E N / B) = 586" in out           # TF Privacy
    assert "q = 1 / len(data_loader) = 1 / 235" in out and "K = int(E / q) = 587" in out  # Opacus
    # Integer epochs dividing the data: every tool counts alike, and nothing is said about it.
    code, out, err = run_main(["epsilon", "--N", "1000", "--batch_size", "100", "--epochs", "3",
                               "-s", "2"], capsys)
    assert code == 0, err
    assert "K = E ceil(N / B) = 3 x 10 = 30" in out and "other tools" not in out
    # Given q and K are printed as given.
    code, out, err = run_main(["epsilon", *SMALL], capsys)
    assert code == 0, err
    assert "q = 0.1" in out and "K = 10" in out


@pytest.mark.parametrize(("n", "b", "e", "k"), [(1000, 100, 0.1, 1), (1000, 100, 0.7, 7),
                                                  (1000, 300, 2, 8), (1000, 300, 0.5, 2),
                                                  (1000, 1000, 3, 3)])
def test_epochs_step_rule(n, b, e, k, capsys):
    # K = ceil(E ceil(N / B)) on the decimal E as typed (0.1 x 10 is one step, not two);
    # for integer E this is dpsgd's epochs rule.
    code, out, err = run_main(["epsilon", "-n", str(n), "-b", str(b), "-e", str(e), "-s", "2",
                               "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["steps"] == k
    if float(e).is_integer():
        mech = dpsgd(noise_multiplier=2.0, dataset_size=n, batch_size=b, epochs=int(e))
        assert data["epsilon"] == pytest.approx(mech.epsilon(1e-5), rel=1e-12)


def test_dataset_shape_with_steps(capsys):
    code, out, err = run_main(["epsilon", "--N", "1000", "--batch_size", "100", "--steps", "7",
                               "-s", "2", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert (data["sample_rate"], data["steps"]) == (0.1, 7)


def test_without_replacement_explains_replace_one_and_its_factor(capsys):
    argv = ["epsilon", "-q", "0.1", "-k", "10", "-s", "2", "--sampling", "without-replacement"]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "neighbouring: replace-one" in text
    assert "up to 2 C, 2x add/remove's C" in text
    assert "noise multiplier 2 / 2 = 1 at unit sensitivity" in text
    # The Poisson figure beside it, so that the gap is seen as the relation's, not a bug.
    poisson = dpsgd(0.1, 2.0, 10).epsilon(1e-5)
    assert f"Poisson sampling (add/remove) at the same q, K and sigma gives epsilon = {poisson:.6g}" \
        in text
    assert "not a guarantee for this run" in text
    code, out, err = run_main([*argv, "--json"], capsys)
    data = json.loads(out)
    assert (data["neighboring"], data["sensitivity_factor"]) == ("replace-one", 2.0)
    code, out, err = run_main(["calibrate", "--epsilon", "2", *argv[1:5], *argv[7:]], capsys)
    assert code == 0, err
    assert "replace-one" in out and "noise multiplier of Poisson sampling" in " ".join(out.split())
    # Poisson's add/remove is the reference relation: no note.
    code, out, err = run_main(["epsilon", *SMALL], capsys)
    assert "neighbouring:" not in out and "for comparison" not in out


def test_delta_subcommand(capsys):
    argv = ["delta", "--epsilon", "1", "-q", "0.1", "-k", "10", "-s", "2"]
    code, out, err = run_main([*argv, "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    mech = dpsgd(0.1, 2.0, 10)
    lower, upper = mech.delta_bounds(1.0)
    assert data["delta"] == pytest.approx(upper, rel=1e-12)
    assert data["delta_lower"] == pytest.approx(lower, rel=1e-12)
    assert data["delta_rdp"] == pytest.approx(mech.delta(1.0, via="rdp"), rel=1e-12)
    assert data["delta_lower"] <= data["delta"] <= data["delta_rdp"]
    assert data["epsilon"] == 1.0
    # epsilon(delta(1)) <= 1: the two subcommands agree.
    assert mech.epsilon(data["delta"]) <= 1.0 * (1 + 1e-9)
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert f"delta = {bound_text(upper, True)} at epsilon = 1" in out and "RDP conversion: delta <=" in out
    code, out, err = run_main(["delta", "--epsilon", "0", "-q", "0.1", "-k", "10", "-s", "2",
                               "--json"], capsys)
    assert code == 0, err  # delta(0) is the total variation distance, a valid question


def test_statement_json_matches_library(capsys):
    code, out, err = run_main(["statement", *TF_PRIVACY, "--examples-per-user", "2", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    # TF_PRIVACY: N = 60000, B = 256, E = 2.5 -> K = ceil(2.5 ceil(60000 / 256)) = 588 steps.
    assert (data["steps"], data["level"], data["examples_per_user"]) == (588, "user", 2)
    assert data["user_sample_rate"] == pytest.approx(1 - (1 - 256 / 60000) ** 2, rel=1e-14)
    mech = dpsgd(256 / 60000, 1.1, 588, examples_per_user=2)
    assert data["epsilon_bracket"] == pytest.approx(list(mech.epsilon_bounds(1e-5)), rel=1e-12)
    assert data["other_tools"]["opacus"]["steps"] == 587


def test_statement_text(capsys):
    code, out, _ = run_main(["statement", *SMALL], capsys)
    assert code == 0
    lower, upper = dpsgd(0.1, 2.0, 10).epsilon_bounds(1e-5)
    # Printed outward: the lower end rounded down, the upper one up (to nearest, 1.5159233 was 1.51592).
    assert f"[{bound_text(lower, False)}, {bound_text(upper, True)}]" in out
    for phrase in ("example-level", "Chua et al. 2024", "RDP accountant"):
        assert phrase in out


@pytest.mark.parametrize("extra, words", [
    (["--examples-per-user", "0"], ["--examples-per-user", "positive integer"]),
    (["--examples-per-user", "2", "--sampling", "without-replacement"], ["--examples-per-user", "poisson"]),
    (["--examples-per-user", "1", "--sampling", "without-replacement"], ["--examples-per-user", "poisson"]),
])
@pytest.mark.parametrize("command", ["statement", "epsilon"])
def test_statement_bad_input_exits_2(command, extra, words, capsys):
    code, out, err = run_main([command, *SMALL, *extra], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and all(w in err for w in words)


def test_user_level_epsilon_and_calibrate_match_library(capsys):
    code, out, err = run_main(["epsilon", *SMALL, "--examples-per-user", "3", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    mech = dpsgd(0.1, 2.0, 10, examples_per_user=3)
    assert [data["epsilon_lower"], data["epsilon"]] == pytest.approx(list(mech.epsilon_bounds(1e-5)),
                                                                     rel=1e-12)
    assert data["examples_per_user"] == 3
    code, out, err = run_main(["calibrate", "--epsilon", "2", "-q", "0.1", "-k", "10", "-m", "3",
                               "--json"], capsys)
    assert code == 0, err
    sigma = json.loads(out)["noise_multiplier"]
    assert dpsgd(0.1, sigma, 10, examples_per_user=3).epsilon(1e-5) <= 2.0
    assert dpsgd(0.1, sigma * 0.99, 10, examples_per_user=3).epsilon_bounds(1e-5)[0] > 2.0 * 0.999
    code, out, err = run_main(["epsilon", *SMALL, "-m", "3"], capsys)
    assert code == 0 and "Binomial(3, q)" in out


def test_calibrate_json():
    res = run_cli("calibrate", "--epsilon", "2", "--delta", "1e-5", "--sample-rate", "1",
                  "--steps", "50", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    sigma = data["noise_multiplier"]
    assert sigma == calibrate_dpsgd(2.0, 1e-5, 1.0, 50)
    # q = 1: 50 composed Gaussians, whose exact calibration is the analytic Gaussian
    exact = calibrate_gaussian(2.0, 1e-5, 50)
    assert exact * (1 - 1e-9) <= sigma <= exact * 1.002
    assert data["epsilon"] <= 2.0
    assert data["epsilon"] == pytest.approx(dpsgd(1.0, sigma, 50).epsilon(1e-5), rel=1e-12)


def test_calibrate_text(capsys):
    code, out, err = run_main(["calibrate", "--epsilon", "1", "--sample-rate", "1",
                               "--steps", "4"], capsys)
    assert code == 0, err
    assert "noise multiplier" in out
    assert bound_text(calibrate_dpsgd(1.0, 1e-5, 1.0, 4), True) in out


def test_plot_writes_png(tmp_path):
    path = tmp_path / "curve.png"
    res = run_cli("plot", "--sample-rate", "0.5", "--noise-multiplier", "2", "--steps", "5",
                  "--output", str(path))
    assert res.returncode == 0, res.stderr
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("name", "magic"), [("curve.pdf", b"%PDF"), ("curve.PDF", b"%PDF"),
                                             ("curve.svg", b"<?xml"), ("c.v2.png", b"\x89PNG")])
def test_plot_format_follows_the_suffix(name, magic, tmp_path, capsys):
    path = tmp_path / name
    code, out, err = run_main(["plot", "-q", "0.5", "-s", "2", "-k", "5", "-o", str(path)], capsys)
    assert code == 0, err
    data = path.read_bytes()
    assert data.startswith(magic)
    if name.endswith(".svg"):
        assert b"<svg" in data[:1000]
    assert f"wrote {path}" in out


@pytest.mark.parametrize("name", ["curve", "curve.jpeg", "curve.txt"])
def test_plot_refuses_unknown_suffix_before_computing(name, tmp_path, capsys, monkeypatch):
    import autoacct.cli as cli

    monkeypatch.setattr(cli, "_mechanism", lambda *a: pytest.fail("computed before the check"))
    code, _, err = run_main(["plot", "-q", "0.5", "-s", "2", "-k", "5", "-o",
                             str(tmp_path / name)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ".png, .pdf or .svg" in err
    assert not (tmp_path / name).exists()


BAD = [
    [],                                                                  # no subcommand
    ["epsilon", "--noise-multiplier", "1", "--steps", "10"],             # missing --sample-rate
    ["epsilon", "--sample-rate", "0.1", "--steps", "10"],                # missing sigma
    ["epsilon", "--sample-rate", "1.5", "--noise-multiplier", "1", "--steps", "10"],
    ["epsilon", "--sample-rate", "0", "--noise-multiplier", "1", "--steps", "10"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "-1", "--steps", "10"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "0"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "10", "--delta", "1"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "10", "--delta", "0"],
    ["epsilon", "--sample-rate", "x", "--noise-multiplier", "1", "--steps", "10"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "10",
     "--dataset-size", "100"],                                           # contradictory
    ["epsilon", "--dataset-size", "100", "--batch-size", "10", "--noise-multiplier", "1"],
    ["epsilon", "--dataset-size", "10", "--batch-size", "100", "--epochs", "1",
     "--noise-multiplier", "1"],                                         # batch > dataset
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "10",
     "--sampling", "shuffle"],
    ["epsilon", "--sample-rate", "0.1", "--noise-multiplier", "1", "--epochs", "2"],  # no N, B
    ["epsilon", "--N", "100", "--batch_size", "10", "--epochs", "2", "--steps", "5",
     "--noise_multiplier", "1"],                                         # steps and epochs
    ["epsilon", "--N", "100", "--epochs", "2", "--noise_multiplier", "1"],  # no batch size
    ["epsilon", "--N", "100", "--batch_size", "10", "--epochs", "0", "--noise_multiplier", "1"],
    ["calibrate", "--sample-rate", "0.1", "--steps", "10"],              # missing --epsilon
    ["delta", "--sample-rate", "0.1", "--steps", "10", "-s", "1"],       # missing --epsilon
    ["delta", "--epsilon", "-1", "--sample-rate", "0.1", "--steps", "10", "-s", "1"],
    ["calibrate", "--epsilon", "0", "--sample-rate", "0.1", "--steps", "10"],
    ["calibrate", "--epsilon", "1", "--sample-rate", "0.1", "--steps", "10", "--delta", "2"],
    ["plot", "--sample-rate", "0.1", "--noise-multiplier", "1"],         # missing --steps
]


@pytest.mark.parametrize("argv", BAD)
def test_bad_input_exits_2(argv, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0]
    assert "Traceback" not in err


MISTYPED = [
    # (argv, words the one-line message must contain)
    (["epsilon", "--sample-rate", "0.1", "--steps", "10", "--noise-multiplyer", "1"],
     ["--noise-multiplyer", "did you mean --noise-multiplier?"]),
    (["epsilon", "--sample_rate", "0.1", "--steps", "10", "--noise-multiplier", "1"],
     ["--sample_rate", "did you mean --sample-rate?"]),
    (["epsilon", "--sample-rate", "0.1", "--steps", "10", "--noise", "1"],
     ["--noise", "did you mean --noise-multiplier?", "abbreviations"]),
    (["epsilon", "--sample-rate", "0.1", "--steps=10", "--noise-multiplier", "1", "--detla=1e-5"],
     ["--detla", "did you mean --delta?"]),
    (["epsilon", "--sample-rate", "0.1", "--steps", "10", "--s", "1"], ["did you mean -s?"]),
    (["epsilon", "-sample-rate", "0.1", "--steps", "10", "-s", "1"], ["did you mean --sample-rate?"]),
    (["epsilon", "--sample-rate", "0.1", "--steps", "10", "--noise-multiplier", "1", "--zzz"],
     ["unrecognized option --zzz", "autoacct epsilon --help"]),
    (["epsilon", "--epsilon", "1", "--sample-rate", "0.1", "--steps", "10"],
     ["--epsilon is an option of autoacct delta and calibrate, not of autoacct epsilon"]),
    (["delta", "--delta", "1e-5"], ["--delta is an option of autoacct epsilon, calibrate, plot and statement"]),
    (["epsilom", "--sample-rate", "0.1"], ["unknown subcommand 'epsilom'", "did you mean epsilon?"]),
    (["calibration", "--epsilon", "1"], ["did you mean calibrate?"]),
    (["eps"], ["did you mean epsilon?"]),
    (["dpsgd", *TF_PRIVACY], ["unknown subcommand 'dpsgd'; did you mean epsilon?"]),
    (["--sample-rate", "0.1", "epsilon"], ["subcommand", "comes first", "--sample-rate"]),
]


@pytest.mark.parametrize(("argv", "words"), MISTYPED)
def test_mistyped_words_are_named_with_a_suggestion(argv, words, capsys):
    code, out, err = run_main(argv, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0]
    assert "required" not in lines[0]  # not reported as a missing option


def test_values_that_look_like_options_are_not_checked_as_options(capsys):
    # Values are skipped whatever they look like; argparse judges them (here: a bad number).
    code, _, err = run_main(["epsilon", "--sample-rate", "0.1", "--steps", "10",
                             "--noise-multiplier", "-1"], capsys)
    assert code == 2 and "must be a positive number" in err
    code, _, err = run_main(["epsilon", "-q0.1", "--steps", "10", "-s", "2", "--json"], capsys)
    assert code == 0, err


def test_bad_input_subprocess():
    res = run_cli("epsilon", "--sample-rate", "2", "--noise-multiplier", "1", "--steps", "10")
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert "--sample-rate" in res.stderr


@pytest.mark.parametrize("cmd", ["epsilon", "delta", "calibrate", "plot", "statement"])
def test_help_explains_conventions(cmd, capsys):
    code, out, _ = run_main([cmd, "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    for phrase in ("add/remove", "replace-one", "clipping norm", "--sample-rate", "--epochs",
                   "--delta" if cmd != "delta" else "--epsilon"):
        assert phrase in text


@pytest.mark.parametrize("cmd", [[], ["epsilon"], ["delta"], ["calibrate"], ["plot"], ["statement"]])
def test_help_shows_single_percent_signs(cmd, capsys):
    code, out, _ = run_main([*cmd, "--help"], capsys)
    assert code == 0
    assert "%%" not in out
    if cmd == ["calibrate"]:
        assert "0.2% of the optimum" in " ".join(out.split())


@pytest.mark.skipif(shutil.which("autoacct") is None, reason="console script not installed")
def test_console_script_readme_command():
    # The README's command, on a run small enough for the test suite.
    res = subprocess.run(["autoacct", "epsilon", "--sample-rate", "1", "--noise-multiplier", "1.1",
                          "--steps", "100", "--delta", "1e-5", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["epsilon"] == pytest.approx(dpsgd(1.0, 1.1, 100).epsilon(1e-5), rel=1e-12)
    assert math.isfinite(data["epsilon_rdp"])


def test_python_m_autoacct_runs_the_cli():
    res = run_cli("epsilon", *SMALL, "--json", module="autoacct")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["epsilon"] == pytest.approx(dpsgd(0.1, 2.0, 10).epsilon(1e-5),
                                                              rel=1e-12)
    res = run_cli("--version", module="autoacct")
    assert res.returncode == 0 and res.stdout.startswith("autoacct ")


def test_progress_goes_to_stderr_when_work_runs_long(capsys, monkeypatch):
    # Forced: every stage counts as long. stdout keeps exactly the answer.
    monkeypatch.setattr(cli, "PROGRESS_AFTER", 0.0)
    code, out, err = run_main(["epsilon", *SMALL, "--json"], capsys)
    assert code == 0
    assert json.loads(out)["steps"] == 10
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("autoacct epsilon: ") for line in lines)
    assert any("computing the certified epsilon" in line for line in lines)
    code, out, err = run_main(["calibrate", "--epsilon", "1", "-q", "1", "-k", "4"], capsys)
    assert code == 0 and "autoacct calibrate: calibrating the noise multiplier" in err
    assert "noise multiplier" in out


def test_progress_is_silent_for_short_work(capsys, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_CLOCK", lambda: 0.0)  # no time passes
    code, out, err = run_main(["epsilon", *SMALL], capsys)
    assert code == 0 and err == ""


def test_progress_reports_only_after_the_threshold(capsys):
    now = [100.0]
    progress = cli.Progress("autoacct calibrate", after=1.0, clock=lambda: now[0])
    progress.stage("calibrating")
    now[0] = 100.9
    progress.report()
    assert capsys.readouterr().err == ""
    now[0] = 102.0
    progress.report()
    progress.stage("checking")
    assert capsys.readouterr().err.splitlines() == ["autoacct calibrate: calibrating... (2 s)",
                                                   "autoacct calibrate: checking... (2 s)"]


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(("argv", "owner", "name"), [
    (["epsilon", *SMALL], Mechanism, "epsilon_bounds"),
    (["delta", "--epsilon", "1", "-q", "0.1", "-k", "10", "-s", "2"], Mechanism, "delta_bounds"),
    (["calibrate", "--epsilon", "1", "-q", "0.1", "-k", "10"], calibrators,
     "calibrate_dpsgd_result"),
])
def test_ctrl_c_exits_130_with_one_line(argv, owner, name, capsys, monkeypatch):
    monkeypatch.setattr(owner, name, _interrupt)  # Ctrl-C in the middle of the accounting
    monkeypatch.setattr(cli, "PROGRESS_CLOCK", lambda: 0.0)  # no progress lines either
    code, out, err = run_main(argv, capsys)
    assert code == 130
    assert out == ""
    assert err == f"autoacct {argv[0]}: interrupted\n"
    assert not any(t.name == "autoacct-progress" for t in threading.enumerate())


def test_ctrl_c_while_parsing(capsys, monkeypatch):
    monkeypatch.setattr(cli, "build_parser", _interrupt)
    code, out, err = run_main(["epsilon", *SMALL], capsys)
    assert (code, out, err) == (130, "", "autoacct epsilon: interrupted\n")


def test_readme_command_line_examples_parse():
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Command line\n"):]
    section = section[:section.index("\n## ", 1)]
    commands = [line for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)
                for line in block.splitlines() if line.startswith("autoacct ")]
    assert {shlex.split(c)[1] for c in commands} == {"epsilon", "delta", "calibrate", "plot", "statement"}
    parser = cli.build_parser()
    for command in commands:
        argv = shlex.split(command)[1:]
        cli.check_words(parser, argv)
        args = parser.parse_args(argv)
        run = cli.make_run(args)
        assert run.steps >= 1 and 0 < run.sample_rate <= 1
