"""The privacy statement: its bracket is autoacct.dpsgd's, its user-level bound reduces to the
example level for one example per user and to the closed-form Gaussian for full batches
(Balle and Wang 2018), and it says what it assumes."""

from __future__ import annotations

import json
import math

import pytest
from closed_forms import gaussian_eps_closed

import autoacct
from autoacct import PrivacyStatement, dpsgd, statement
from autoacct.zoo import Composition, Gaussian, PoissonSubsample

README_RUN = dict(noise_multiplier=1.1, delta=1e-5, sample_rate=0.01, steps=10_000)


@pytest.fixture(scope="module")
def readme_statement() -> PrivacyStatement:
    return statement(**README_RUN)


def test_readme_dpsgd_example(readme_statement: PrivacyStatement):
    st = readme_statement
    # The README's bracket for q = 0.01, sigma = 1.1, 10000 steps, delta 1e-5: (5.1913, 5.1943).
    assert (round(st.epsilon_lower, 4), round(st.epsilon, 4)) == (5.1913, 5.1943)
    assert (st.epsilon_lower, st.epsilon) == dpsgd(0.01, 1.1, 10_000).epsilon_bounds(1e-5)
    assert st.epsilon_rdp == dpsgd(0.01, 1.1, 10_000).epsilon(1e-5, via="rdp")
    text = st.text()
    assert str(st) == text
    # Printed outward: [5.191277, 5.194334] as [5.19127, 5.19434].
    for phrase in ("5.19127, 5.19434", "(5.19434, 1e-05)-differential privacy for one example",
                   "add/remove", "K = 10000", "RDP", "5.63181", "shuffles", "Chua et al. 2024",
                   "example-level"):
        assert phrase in text, phrase
    data = json.loads(st.to_json())
    assert data["epsilon_bracket"] == [st.epsilon_lower, st.epsilon]
    assert (data["level"], data["steps"], data["sample_rate"]) == ("example", 10_000, 0.01)


def test_steps_rule_and_other_tools_from_epochs():
    st = statement(noise_multiplier=1.1, delta=1e-5, dataset_size=60_000, batch_size=256,
                   epochs=2.5, tol=1e-2)
    # An epoch is ceil(60000 / 256) = 235 batches; 2.5 epochs are 587.5, rounded up.
    assert st.steps == 588 and st.sample_rate == 256 / 60_000
    assert st.other_tools == {"tf_privacy": {"sample_rate": 256 / 60_000, "steps": math.ceil(2.5 * 60_000 / 256)},
                              "opacus": {"sample_rate": 1 / 235, "steps": int(2.5 * 235)}}
    assert "K = ceil(E ceil(N / B))" in st.text() and "int(E / q) = 587" in st.text()
    assert st.epsilon == dpsgd(256 / 60_000, 1.1, 588).epsilon(1e-5, tol=1e-2)


def test_user_level_with_one_example_is_example_level():
    run = dict(noise_multiplier=1.1, delta=1e-5, sample_rate=0.02, steps=300)
    user, example = statement(**run, examples_per_user=1), statement(**run)
    assert (user.epsilon_lower, user.epsilon) == (example.epsilon_lower, example.epsilon)
    assert user.level == "user" and "user-level" in user.text() and "Exact" in user.text()


def test_user_level_full_batches_against_closed_form():
    # q = 1: every user is in every batch and moves the sum by m C; K steps of Gaussian noise
    # sigma C are then sqrt(K) m / sigma-GDP, in closed form.
    m, sigma, k = 3, 6.0, 4
    st = statement(noise_multiplier=sigma, delta=1e-5, sample_rate=1.0, steps=k,
                   examples_per_user=m)
    truth = gaussian_eps_closed(math.sqrt(k) * m / sigma, 1e-5)
    assert st.epsilon_lower <= truth * (1 + 1e-9) and truth <= st.epsilon <= truth * (1 + 1e-3)
    assert st.user_sample_rate == 1.0


def test_user_level_json_and_its_step():
    st = statement(noise_multiplier=1.1, delta=1e-5, dataset_size=1000, batch_size=10, steps=200,
                   examples_per_user=4)
    q_u = 1 - (1 - 0.01) ** 4
    assert st.user_sample_rate == pytest.approx(q_u, rel=1e-14)
    assert st.epsilon == dpsgd(0.01, 1.1, 200, examples_per_user=4).epsilon(1e-5)
    # Exact, so below the old bound: the user joins with probability q_u and moves the sum by 4 C.
    assert st.epsilon <= dpsgd(q_u, 1.1 / 4, 200).epsilon_bounds(1e-5)[0]
    data = json.loads(st.to_json())
    assert data["epsilon_bracket"] == [st.epsilon_lower, st.epsilon]
    assert data["examples_per_user"] == 4 and data["level"] == "user"
    # A user of m examples is never better protected than one example.
    assert st.epsilon > statement(noise_multiplier=1.1, delta=1e-5, sample_rate=0.01, steps=200).epsilon


def test_user_level_with_a_cut_tail_keeps_a_certified_lower_end():
    # 60 examples at q = 0.01: the binomial tail above ~20 is cut; the lower end comes from
    # the dominated side and the bracket stays narrow.
    st = statement(noise_multiplier=60.0, delta=1e-6, sample_rate=0.01, steps=100,
                   examples_per_user=60)
    assert 0.0 < st.epsilon_lower <= st.epsilon <= st.epsilon_lower * (1 + 2e-3)


def test_without_replacement_statement():
    st = statement(noise_multiplier=2.0, delta=1e-5, sample_rate=0.05, steps=50,
                   sampling="without-replacement", tol=1e-2)
    assert st.neighboring == "replace-one"
    assert st.epsilon == dpsgd(0.05, 2.0, 50, sampling="without-replacement").epsilon(1e-5, tol=1e-2)
    # The lower end is the attained pair's (PoissonSubsample(0.05)(Gaussian(1.0)), 50 times), certified.
    attained = Composition()([PoissonSubsample(0.05)(Gaussian(1.0))], [50])
    assert st.epsilon_lower <= attained.epsilon_bounds(1e-5, tol=1e-2)[1]
    assert st.epsilon_lower >= attained.epsilon_bounds(1e-5, tol=1e-2)[0] * (1 - 1e-9)
    assert "replace-one" in st.text() and "not certify" in st.text()


def test_statement_is_exported():
    assert autoacct.statement is statement and "statement" in autoacct.__all__


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(noise_multiplier=0.0), ValueError, "noise_multiplier.*0.0"),
    (dict(noise_multiplier=-1.0), ValueError, "noise_multiplier.*-1.0"),
    (dict(delta=0.0), ValueError, "delta.*0.0"),
    (dict(delta=1.0), ValueError, "delta.*1.0"),
    (dict(sample_rate=1.5), ValueError, "sample_rate.*1.5"),
    (dict(sample_rate=-0.1), ValueError, "sample_rate.*-0.1"),
    (dict(steps=-5), ValueError, "steps.*-5"),
    (dict(steps=2.5), ValueError, "steps.*2.5"),
    (dict(steps="10"), TypeError, "steps"),
    (dict(examples_per_user=0), ValueError, "examples_per_user.*0"),
    (dict(examples_per_user=2, sampling="without-replacement"), ValueError, "examples_per_user"),
    (dict(sampling="shuffle"), ValueError, "sampling.*'shuffle'"),
    (dict(dataset_size=100, batch_size=10), ValueError, "sample_rate contradicts dataset_size"),
    (dict(steps=None), ValueError, "missing steps"),
])
def test_bad_input_is_named(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        statement(**{**README_RUN, "steps": 10, **kwargs})


def test_bad_shapes_from_the_dataset():
    with pytest.raises(ValueError, match="batch_size.*must not exceed"):
        statement(noise_multiplier=1.0, delta=1e-5, dataset_size=10, batch_size=20, steps=3)
    with pytest.raises(ValueError, match="examples_per_user must not exceed dataset_size"):
        statement(noise_multiplier=1.0, delta=1e-5, dataset_size=10, batch_size=2, steps=3,
                  examples_per_user=11)
