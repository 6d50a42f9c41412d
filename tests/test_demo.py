"""The demo's training reaches the accuracy README states, and its losses are the CPU reference's bits."""

from __future__ import annotations

from vkml import demo


def test_demo_reaches_the_readme_accuracy_in_three_submissions_per_step(gpu):
    history = demo.train(gpu, demo.make_spirals(), show=False)
    final = history.epochs[-1]
    assert final["test_acc"] >= 0.95
    assert all(e["submissions"] == 3 for e in history.epochs)  # forward, gradients, update
    assert len(history.losses) == demo.EPOCHS * demo.TRAIN_POINTS // demo.BATCH


def test_demo_report_and_cpu_losses_bit_for_bit(gpu, capsys):
    assert demo.main(["--epochs", "2"]) == 0  # 0: every loss on Vulkan equals the CPU reference's bits
    out = capsys.readouterr().out
    for text in ("best_device() -> " + gpu.name, "epoch  2/2", "ms/step", "3 submissions per step", "every one of 20"):
        assert text in out


def test_bench_training_step_keeps_the_contract_of_tools_bench(gpu):
    from bench_training import bench_training_step

    result = bench_training_step(device=gpu, torch_device="cpu", quick=True, repeats=2, budget_s=1.0)
    assert 1 <= len(result["vkml_seconds"]) <= 2 and 1 <= len(result["torch_seconds"]) <= 2
    assert all(s > 0 for s in result["vkml_seconds"] + result["torch_seconds"])
    assert result["vkml_peak_bytes"] > 0 and "MLP" in result["size"]
    # timed once a whole pass over the ten batches compiled nothing, and the row says after how many steps
    assert 10 <= result["warm_steps"] <= 40 and f"after {result['warm_steps']} untimed steps" in result["note"]
