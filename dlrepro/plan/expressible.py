"""What each framework's adapter can express of a spec: the planner asks it of every (variant, tool) before any job
exists, and run/jobs.py leaves out the pairs it names, with its reason."""

from dlrepro.inputs import datasets
from runner import shapes
from runner.adapters import capabilities


def unsupported(spec, variant_name, framework):
    """Why ``framework``'s adapter (NAME, or NAME@VERSION: that version's, runner.adapters.capabilities.of) cannot
    express variant ``variant_name`` of ``spec``, or None."""
    variant = spec.variants[variant_name]
    model = spec.models[variant.model]
    weights = datasets.lookup(variant.weights.dataset).format if variant.weights else None
    return capabilities.unsupported(
        framework,
        shapes.expand(model.layer_dicts(), model.input_shape),
        variant.loss.name,
        variant.optimizer.name if variant.optimizer else None,
        weights,
    )


def unsupported_pairs(spec):
    """[(variant, framework, reason)] for every pair of ``spec`` that the framework's adapter cannot express."""
    return [
        (name, framework, reason)
        for name in spec.variants
        for framework in spec.frameworks
        for reason in [unsupported(spec, name, framework)]
        if reason
    ]
