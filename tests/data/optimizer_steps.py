"""Three training steps of a linear softmax classifier with the CNTK adapter's learner (``_learner``) for each
optimizer setting, the weights written after them: ``python tests/data/optimizer_steps.py OUT.json``.

Used by tests/engine/test_optimizers.py, which takes the same steps with torch.optim on the host: the adapter's claim
(runner/adapters/cntk_adapter.py) that its learners make PyTorch's updates. Python 3.6 syntax (the CNTK image)."""

import json
import sys

import numpy as np

SETTINGS = [
    {"name": "sgd", "lr": 0.1},
    {"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    {"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True},
    {"name": "adam", "lr": 0.01},
]
STEPS = 3


def problem():
    """(initial weights (4, 3), inputs (5, 4), integer labels (5,)), fixed."""
    rng = np.random.RandomState(7)
    return (
        rng.normal(0, 0.5, (4, 3)).astype(np.float32),
        rng.normal(0, 1, (5, 4)).astype(np.float32),
        np.array([0, 2, 1, 2, 0]),
    )


def main(out):
    import cntk as C

    from runner.adapters.cntk_adapter import _learner

    w0, x, y = problem()
    found = []
    for opt in SETTINGS:
        features, labels = C.input_variable(4), C.input_variable(3)
        w = C.parameter(shape=(4, 3), init=w0)
        z = C.times(features, w)
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, labels), None), [_learner([w], opt, len(x))])
        for _ in range(STEPS):
            trainer.train_minibatch({features: x, labels: np.eye(3, dtype=np.float32)[y]})
        found.append(np.asarray(w.value).tolist())
    with open(out, "w") as f:
        json.dump(found, f)


if __name__ == "__main__":
    main(sys.argv[1])
