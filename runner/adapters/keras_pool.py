"""Caffe's pooling as a Keras 3 layer, shared by the Keras 3 adapter (keras.ops: any backend) and the TensorFlow
adapter (``CaffePool`` with TensorFlow's own pooling ops: its step keeps NCHW pooling on GPUs, where keras.ops would
transpose to NHWC and back).
"""

import keras

from runner import shapes


class CaffePool(keras.layers.Layer):
    """Max or average pooling with Caffe's ceil rounding and symmetric padding, on (N, C, H, W) with
    ``channels_first``, else (N, H, W, C); ``in_shape`` (C, H, W).

    The input is padded by ``pad`` on every side and, for ceil rounding, by the extra cells the last window needs
    on the bottom and right: -inf for maximum; for averages the window's sum is divided by its cells inside the
    symmetric padding (padding cells count, cells beyond it do not), as Caffe and PyTorch do. The ops are keras.ops
    here; a subclass may give its framework's own (``_pad``, ``_max``, ``_average``, ``_ones``, ``FORMATS``).
    """

    FORMATS = ("channels_first", "channels_last")  # the data_format of the pooling op: channels first, last
    PADDING = "valid"

    def __init__(self, kind, kernel, stride, pad, ceil, in_shape, channels_first, **kwargs):
        super(CaffePool, self).__init__(**kwargs)
        self.kind, self.kernel, self.stride, self.cf = kind, kernel, stride, channels_first
        _, h, w = in_shape
        self.extra = [
            max(0, (shapes.pool_output(n, kernel, stride, pad, ceil) - 1) * stride + kernel - n - 2 * pad)
            for n in (h, w)
        ]
        self.pad, self.size = pad, (h + 2 * pad, w + 2 * pad)

    # keras.ops looked up when called: Keras 2 (keras2_adapter, which imports keras_adapter) has no keras.ops
    @staticmethod
    def _pad(*args, **kwargs):
        return keras.ops.pad(*args, **kwargs)

    @staticmethod
    def _ones(*args, **kwargs):
        return keras.ops.ones(*args, **kwargs)

    @staticmethod
    def _max(*args, **kwargs):
        return keras.ops.max_pool(*args, **kwargs)

    @staticmethod
    def _average(*args, **kwargs):
        return keras.ops.average_pool(*args, **kwargs)

    def _spatial(self, x, before, after, value):
        spatial = [[before, after[0]], [before, after[1]]]
        return self._pad(
            x, [[0, 0], [0, 0]] + spatial if self.cf else [[0, 0]] + spatial + [[0, 0]], constant_values=value
        )

    def _window(self, x, op):
        return op(x, self.kernel, self.stride, self.PADDING, data_format=self.FORMATS[0 if self.cf else 1])

    def call(self, x):
        after = [self.pad + e for e in self.extra]
        if self.kind == "maxpool":
            return self._window(self._spatial(x, self.pad, after, float("-inf")), self._max)
        total = self._window(self._spatial(x, self.pad, after, 0.0), self._average)
        ones = self._ones([1, 1] + list(self.size) if self.cf else [1] + list(self.size) + [1])
        return total / self._window(self._spatial(ones, 0, self.extra, 0.0), self._average)
