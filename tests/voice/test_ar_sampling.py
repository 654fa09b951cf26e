"""CosyVoice-style sampling: top-k/top-p, repetition-aware resampling, eos masking, lengths."""

from __future__ import annotations

import numpy as np

from edgetts.voice.ar.sampling import SamplingParams, SpeechTokenSampler, nucleus_candidates, ras_sample


def test_top_p_and_top_k_limit_the_candidates():
    probs = np.array([0.05, 0.5, 0.2, 0.15, 0.1])
    # taken while the probability before the token is < top_p: 0.5 | 0.7 | 0.85 -> 3 tokens
    assert nucleus_candidates(probs, top_p=0.8, top_k=25).tolist() == [1, 2, 3]
    assert nucleus_candidates(probs, top_p=0.8, top_k=2).tolist() == [1, 2]
    assert nucleus_candidates(probs, top_p=0.3, top_k=25).tolist() == [1]
    assert nucleus_candidates(probs, top_p=1.0, top_k=25).tolist() == [1, 2, 3, 4, 0]


def test_picks_stay_in_the_nucleus():
    probs = np.array([0.05, 0.5, 0.2, 0.15, 0.1])
    rng = np.random.default_rng(0)
    params = SamplingParams(top_k=25, top_p=0.8, win_size=0)
    picks = {ras_sample(probs, [], params, rng)[0] for _ in range(300)}
    assert picks == {1, 2, 3}


def test_repetition_triggers_resampling_from_the_full_distribution():
    probs = np.array([0.0, 0.98, 0.01, 0.01])
    params = SamplingParams(top_k=1, top_p=0.8, win_size=10, tau_r=0.1)  # 1 repeat in 10 is enough
    rng = np.random.default_rng(1)
    assert ras_sample(probs, [0, 2, 3], params, rng) == (1, False)
    results = [ras_sample(probs, [1], params, rng) for _ in range(200)]
    assert all(resampled for _, resampled in results)
    # the full distribution sometimes picks what the nucleus (top_k=1) never would
    assert {t for t, _ in results} >= {1, 2} or {t for t, _ in results} >= {1, 3}
    # a repeat older than the window does not count
    assert ras_sample(probs, [1] + [2] * 10, params, rng)[1] is False


def test_seeded_generator_reproduces_the_sequence():
    logits = np.random.default_rng(5).standard_normal(50)
    s = SpeechTokenSampler(SamplingParams(), speech_offset=10, speech_vocab_size=30, stop_ids=[45])

    def run(seed):
        rng, hist = np.random.default_rng(seed), []
        for step in range(40):
            t = s.pick(logits + np.random.default_rng(step).standard_normal(50), hist, step, 0, rng)
            hist.append(t)
        return hist

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_stop_tokens_masked_before_min_len_and_allowed_after():
    logits = np.full(50, -10.0)
    logits[45] = 20.0  # the stop token dominates
    s = SpeechTokenSampler(SamplingParams(), speech_offset=10, speech_vocab_size=30, stop_ids=[45])
    rng = np.random.default_rng(0)
    before = [s.pick(logits, [], step, 5, rng) for step in range(5)]
    assert all(10 <= t < 40 for t in before)  # only speech tokens, offset included
    assert s.pick(logits, [], 5, 5, rng) == 45 and s.is_stop(45)
    # ids outside the speech range and the stop tokens are never produced
    logits2 = np.full(50, -10.0)
    logits2[3] = 50.0
    assert all(s.pick(logits2, [], 9, 0, rng) in set(range(10, 40)) | {45} for _ in range(50))


def test_length_limits_follow_the_text_length():
    p = SamplingParams()
    assert p.length_limits(10) == (20, 200)
    assert SamplingParams(min_len_ratio=1.5, max_len_ratio=3).length_limits(5) == (7, 15)
