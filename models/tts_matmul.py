"""Kokoro's int8 convolutions as integer matrix products: the same audio, a third sooner.

The int8 Kokoro model quantises each of its 87 1-D convolutions dynamically::

    x_q, x_s, x_zp = DynamicQuantizeLinear(x)
    acc = ConvInteger(x_q, W_u8, x_zp, W_zp)          # int32
    y = Cast(acc [+ floor(bias / (x_s * W_s))]) * (x_s * W_s)

ONNX Runtime's ConvInteger takes only unsigned weights and runs an unsigned x unsigned
integer product, which has no VNNI kernel; it took 60 % of the time of a short clause on
two cores. :func:`convert` rewrites each one as an im2col (Transpose, Pad with the zero
point, one strided Slice per kernel tap, Concat: all on uint8) and a MatMulInteger with
the weights made signed (``W_u8 - 128``, zero point ``W_zp - 128``: the same differences,
so the int32 sums are the same), then the original bias, cast and scale. On a 2-core
VNNI machine a short clause ("The capital") took 296 ms instead of 448, a sentence 0.96 s
instead of 1.42, and the audio was bit-identical, loaded with BASIC optimisation
( and no transpose optimiser: at the ALL level ONNX Runtime moves the
new Transposes into normalisation nodes and the float sums come out in another order).

The signed product is exact only where ONNX Runtime has a VNNI kernel for it
(``avx512_vnni`` or ``avx_vnni``); without VNNI it may saturate 16-bit sums. So
:func:`vnni` is checked first, and :mod:`models.tts` also compares the audio of both
models once before it uses the new one.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np

VNNI_FLAGS = ("avx512_vnni", "avx_vnni")
MARK = "-matmul-"  # in the name of a converted model file
REJECTED = ".rejected"  # added to a converted model's name when its audio was not the same


def converted(path: Path) -> bool:
    """Whether ``path`` names a model :func:`convert` wrote (as :mod:`models.tts` names them)."""
    return MARK in path.name


def rejected_in(models_dir: Path) -> bool:
    """Whether a model converted in ``models_dir`` was refused for not saying the same as
    the original (:mod:`models.tts` leaves a :data:`REJECTED` file beside where it would be)."""
    return any((models_dir / "tts").glob(f"*{MARK}*{REJECTED}"))


def vnni(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has a VNNI instruction set ONNX Runtime uses for signed x unsigned products."""
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return False
    return any(flag in flags.split() for flag in VNNI_FLAGS)


# Loading the converted model: ONNX Runtime's BASIC optimisation level and, off, the one
# optimiser that reorders float sums here.
DISABLED_OPTIMIZERS = ["TransposeOptimizer"]


class _Graph:
    """Producers, consumers and initialisers of an ONNX graph, and the new initialisers."""

    def __init__(self, graph) -> None:
        from onnx import numpy_helper

        self.graph = graph
        self.inits = {i.name: i for i in graph.initializer}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list] = collections.defaultdict(list)
        for n in graph.node:
            for i in n.input:
                self.consumers[i].append(n)
        self.new_inits: list = []
        self._numpy_helper = numpy_helper

    def array(self, name: str) -> np.ndarray:
        return self._numpy_helper.to_array(self.inits[name])

    def const(self, name: str, value) -> str:
        self.new_inits.append(self._numpy_helper.from_array(np.asarray(value), name))
        return name

    def only(self, name: str, op: str):
        """The one consumer of ``name``, which must be an ``op``."""
        found = self.consumers[name]
        if len(found) != 1 or found[0].op_type != op:
            raise ValueError(f"{name}: expected one {op} after it, found {[n.op_type for n in found]}")
        return found[0]


def _conv_as_matmul(g: _Graph, conv) -> tuple[list, list]:
    """The nodes that replace ``conv`` and the cast and scale after it, and the old nodes they replace."""
    from onnx import TensorProto, helper

    x_q, w_q, x_zp, w_zp = conv.input
    after = g.consumers[conv.output[0]]
    if len(after) != 1:
        raise ValueError(f"{conv.name}: its output has {len(after)} consumers")
    bias_q = None
    if after[0].op_type == "Add":  # (acc + Reshape(floor(bias / scale))) then Cast, Mul
        add = after[0]
        reshape = g.producer[next(i for i in add.input if i != conv.output[0])]
        if reshape.op_type != "Reshape":
            raise ValueError(f"{conv.name}: its bias is not a reshaped vector")
        bias_q = reshape.input[0]  # int32 [Cout]: added along the last axis of the [1, T, Cout] product
        cast = g.only(add.output[0], "Cast")
        replaced = [conv, add, cast]
    elif after[0].op_type == "Cast":
        cast = after[0]
        replaced = [conv, cast]
    else:
        raise ValueError(f"{conv.name}: unexpected {after[0].op_type} after it")
    mul = g.only(cast.output[0], "Mul")
    replaced.append(mul)
    scale = next(i for i in mul.input if i != cast.output[0])
    weights, zero = g.array(w_q), g.array(w_zp)
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    if weights.ndim != 3 or zero.size != 1 or attrs.get("group", 1) != 1:
        raise ValueError(f"{conv.name}: not a per-tensor quantised 1-D convolution")
    c_out, c_in, k = weights.shape
    dilation = attrs.get("dilations", [1])[0]
    stride = attrs.get("strides", [1])[0]
    pad_left, pad_right = attrs.get("pads", [0, 0])
    p = conv.name.replace("_quant", "")
    signed = (weights.astype(np.int16) - 128).astype(np.int8).transpose(2, 1, 0).reshape(k * c_in, c_out)

    nodes = [helper.make_node("Transpose", [x_q], [p + "_xt"], perm=[0, 2, 1], name=p + "_xt")]
    cur = p + "_xt"
    if pad_left or pad_right:
        pads = g.const(p + "_pads", np.array([0, pad_left, 0, 0, pad_right, 0], np.int64))
        nodes.append(helper.make_node("Pad", [cur, pads, x_zp], [p + "_xp"], name=p + "_pad"))
        cur = p + "_xp"
    if k > 1 or stride > 1:
        taps = []
        axis, step = g.const(p + "_ax", np.array([1], np.int64)), g.const(p + "_sp", np.array([stride], np.int64))
        for j in range(k):
            back = dilation * (k - 1) - j * dilation
            start = g.const(f"{p}_st{j}", np.array([j * dilation], np.int64))
            end = g.const(f"{p}_en{j}", np.array([-back if back else 2**62], np.int64))
            nodes.append(helper.make_node("Slice", [cur, start, end, axis, step], [f"{p}_c{j}"], name=f"{p}_slice{j}"))
            taps.append(f"{p}_c{j}")
        if k > 1:
            nodes.append(helper.make_node("Concat", taps, [p + "_col"], axis=2, name=p + "_im2col"))
            cur = p + "_col"
        else:
            cur = taps[0]
    w_signed = g.const(p + "_w8", np.ascontiguousarray(signed))
    zero_signed = g.const(p + "_wzp8", np.array(int(zero) - 128, np.int8))
    nodes.append(helper.make_node("MatMulInteger", [cur, w_signed, x_zp, zero_signed], [p + "_acc"], name=p + "_mmi"))
    acc = p + "_acc"
    if bias_q is not None:
        nodes.append(helper.make_node("Add", [acc, bias_q], [p + "_accb"], name=p + "_bias"))
        acc = p + "_accb"
    nodes += [helper.make_node("Cast", [acc], [p + "_accf"], to=TensorProto.FLOAT, name=p + "_cast"),
              helper.make_node("Mul", [p + "_accf", scale], [p + "_yt"], name=p + "_scale"),
              helper.make_node("Transpose", [p + "_yt"], [mul.output[0]], perm=[0, 2, 1], name=p + "_y")]
    return nodes, replaced


def convert(source: Path, target: Path) -> int:
    """Write ``source`` with every ConvInteger as an im2col and a MatMulInteger to
    ``target``; returns how many were rewritten."""
    import onnx

    model = onnx.load(str(source))
    g = _Graph(model.graph)
    replace, drop = {}, set()
    for node in model.graph.node:
        if node.op_type == "ConvInteger":
            nodes, replaced = _conv_as_matmul(g, node)
            replace[id(replaced[-1])] = nodes  # the new nodes go where the scale was
            drop.update(id(n) for n in replaced)
    out = []
    for node in model.graph.node:
        if id(node) in replace:
            out += replace[id(node)]
        elif id(node) not in drop:
            out.append(node)
    outputs = {o.name for o in model.graph.output}
    while True:  # what only fed the old nodes (the bias quantisation, for one) goes too
        used = {i for n in out for i in n.input} | outputs
        kept = [n for n in out if any(o in used for o in n.output if o)]
        if len(kept) == len(out):
            break
        out = kept
    del model.graph.node[:]
    model.graph.node.extend(out)
    model.graph.initializer.extend(g.new_inits)
    used = {i for n in out for i in n.input}
    inits = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    del model.graph.value_info[:]  # shapes of tensors that are gone
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return len(replace)
