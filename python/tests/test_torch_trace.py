"""fprev.torch.trace and fprev.torch.certify on real PyTorch models (skipped, with the
reason, where PyTorch is not installed).

The CPU facts the tests stand on, measured with PyTorch 2.15.0 (MKL, AVX-512, one
thread): ``F.linear`` of one row runs a matrix-vector kernel and of two rows or more a
matrix-matrix kernel, so row 0's bits differ between M = 1 and M = 8 at every K tried
(16 to 1024); ``torch.sum``/``mean`` over the last dimension of an (M, D) tensor laid
out column-major (strides (1, M)) sums row 0 one way at M = 1 (the tensor is
contiguous then) and another from M = 2 on; ``softmax`` and ``layer_norm`` gave row 0
the same bits at every M. Every test fixes the thread count (the order depends on it).
"""

import json

import numpy as np
import pytest

import fprev

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
nn = torch.nn
F = torch.nn.functional


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Block(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(x)))


class MLP(nn.Module):
    def __init__(self, d=64, hidden=128, layers=2, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.layers = nn.ModuleList([Block(d, hidden) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def rows(d, seed=1, layout=None, binades=0):
    """``make_input``: the first m rows of one seeded (64, d) tensor, so row 0 is the
    same at every m; ``binades``: values spread over that many binades (two orders of a
    sum then round differently more often)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(64, d, generator=g)
    if binades:
        base = base * torch.exp2(torch.randint(-binades // 2, binades // 2, (64, d),
                                               generator=g).float())

    def make(m):
        x = base[:m].clone()
        return x.t().contiguous().t() if layout == "column-major" else x

    return make


def linear_fn(weight, bias=None):
    """``fn(a, b)`` for fprev.reveal_matmul: F.linear of ``a`` with ``b`` as the
    transposed weight, laid out as nn.Linear's ``weight.t()`` is."""
    def fn(a, b):
        w = torch.from_numpy(np.ascontiguousarray(b.T))
        z = None if bias is None else torch.zeros_like(bias)
        return F.linear(torch.from_numpy(a.copy()), w, z).numpy()

    return fn


def test_mlp_is_traced_to_its_first_linear_with_reveal_matmuls_trees():
    model = MLP(d=64, hidden=128).eval()
    t = fprev.torch.trace(model, rows(64), sizes=(1, 8))
    first = t.first
    assert first is not None
    assert first.op == "aten.addmm.default"
    assert first.module == "layers.0.fc1"
    assert first.index[0] == 0  # row 0 of the (M, 128) output
    assert set(first.trees) == {1, 8}
    assert first.trees[1] != first.trees[8], first.describe()
    # the same element of the same product, revealed directly with reveal_matmul
    i, j = first.index
    fc1 = model.layers[0].fc1
    for m in (1, 8):
        orders = fprev.reveal_matmul(linear_fn(fc1.weight.detach(), fc1.bias), m, 128, 64)
        (tree,) = [tr for tr, elements in orders.groups if (i, j) in elements]
        assert first.trees[m] == tree
    # every operation before it gave row 0 the same bits
    before = t.ops[: first.record.index]
    assert all(op.verdict in ("equal", "not compared") for op in before)
    assert any(op.verdict == "equal" for op in before) or first.record.index <= 2
    assert first.record.verdict == "differs" and first.record.differs_at == [8]
    text = first.describe()
    assert text.startswith("aten.addmm.default in layers.0.fc1, element (0, ")
    assert "M = 1: " in text and "; M = 8: " in text


def test_trace_json_names_the_operation_and_its_trees():
    model = MLP(d=32, hidden=32, layers=1).eval()
    t = fprev.torch.trace(model, rows(32), sizes=(1, 4))
    data = json.loads(t.to_json())
    assert data["schema"] == "fprev.torch.trace/1"
    assert data["sizes"] == [1, 4]
    assert data["first"]["op"] == "aten.addmm.default"
    assert data["first"]["module"] == "layers.0.fc1"
    for m, text in data["first"]["trees"].items():
        assert fprev.Tree.parse(text) == t.first.trees[int(m)]
    assert len(data["ops"]) == len(t.ops)
    assert [op["op"] for op in data["ops"]] == [op.op for op in t.ops]


class PerRow(nn.Module):
    """Batch-invariant by construction: every row goes through the layers alone."""

    def __init__(self, d=32, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.fc = nn.Linear(d, d)
        self.out = nn.Linear(d, 8)

    def forward(self, x):
        return torch.cat([self.out(torch.tanh(self.fc(x[i:i + 1]))) for i in range(len(x))])


def test_a_per_row_model_is_certified_invariant_over_1_to_16():
    model = PerRow().eval()
    make = rows(32)
    assert fprev.torch.trace(model, make, sizes=(1, 8)).first is None
    cert = fprev.torch.certify(model, make, range(1, 17))
    assert cert.invariant, cert.describe()
    assert cert.breakpoints == {}
    assert [op.op for op in cert.ops] == ["aten.addmm.default"] * 2
    for op in cert.ops:
        assert op.reason is None and op.breakpoints == []
        assert len(op.ranges) == 1 and op.ranges[0][:2] == (1, 16)
        assert op.searched == [1]  # one call, the same at every size
        assert op.trees[1].n == 32
    # rows 1.. run only at some sizes: listed, not certified
    assert cert.unmatched and all(u["sizes"][0] > 1 for u in cert.unmatched)
    assert json.loads(cert.to_json())["invariant"] is True


def test_the_mlp_certificate_has_the_linear_breakpoint_at_2():
    model = MLP(d=32, hidden=64, layers=1).eval()
    cert = fprev.torch.certify(model, rows(32), range(1, 9))
    assert not cert.invariant
    labels = [op.label() for op in cert.ops]
    assert labels == ["layers.0.fc1 aten.addmm.default", "layers.0.fc2 aten.addmm.default"]
    # one row runs the matrix-vector kernel, two and more the matrix-matrix one
    assert 2 in cert.breakpoints
    assert cert.breakpoints[2] == labels
    for op in cert.ops:
        assert op.trees[1] != op.trees[2]
        assert op.searched == list(range(1, 9))
        assert op.row_uniform
    # the swept tree at M = 8 is reveal_matmul's for row 0, column 0
    fc1 = model.layers[0].fc1
    orders = fprev.reveal_matmul(linear_fn(fc1.weight.detach(), fc1.bias), 8, 64, 32)
    (tree,) = [tr for tr, elements in orders.groups if (0, 0) in elements]
    assert cert.ops[0].trees[8] == tree
    # the columns-as-lanes sweep finds fprev.sweep's trees, one probe per call
    def make(m):
        fn = linear_fn(fc1.weight.detach(), fc1.bias)
        a = np.zeros((m, 32), np.float32)
        b = np.ones((32, 64), np.float32)

        def row0(x):
            a[0] = x
            return fn(a, b)[0, 0]

        return row0

    plain = fprev.sweep(make, range(1, 9), 32, label="M")
    assert plain.trees == cert.ops[0].trees
    svg = cert.svg(title="MLP")
    assert svg.startswith("<svg") and svg.count("#d00000") >= 2 and "layers.0.fc1" in svg
    data = json.loads(cert.to_json())
    assert data["breakpoints"]["2"] == labels


class Norm(nn.Module):
    """LayerNorm as many models write it by hand (a mean, then a variance)."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, d))

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) * torch.rsqrt(var + 1e-6) * self.weight


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(1.0, 2.0, d))
        self.norm = Norm(d)

    def forward(self, x):
        return self.norm(F.relu(x * self.scale) - 0.5 * x)


def test_a_change_in_a_norms_reduction_is_traced_there():
    # activations laid out column-major (as a transposed producer leaves them): a
    # mean over the last dimension reduces along stride M, one way at M = 1 (8
    # interleaved parts of 32) and another from M = 2 on (4 parts of 64). The first
    # mean happens to round to the same bits both ways; the variance's does not
    d = 256
    make = rows(d, layout="column-major", binades=20)
    model = Scaled(d).eval()
    t = fprev.torch.trace(model, make, sizes=(1, 8))
    first = t.first
    assert first is not None, t.describe()
    assert (first.op, first.module) == ("aten.mean.dim", "norm")
    assert first.record.occurrence == 1
    assert first.index == (0, 0)
    assert first.how.startswith("replayed as aten.sum")
    assert first.trees[1] != first.trees[8]
    assert first.trees[1].n == first.trees[8].n == d
    # the trees reproduce the sum of row 0 at each size, laid out as in the model
    for m in (1, 8):
        x = make(m)
        v = F.relu(x * model.scale.detach()) - 0.5 * x
        assert v.stride() == ((1, m) if m > 1 else (d, 1))
        got = float(v.sum(-1)[0])
        assert first.trees[m].replay(v[0].numpy().astype(np.float32)) == got
    before = t.ops[: first.record.index]
    assert [(op.module, op.op) for op in before] == [
        ("", "aten.mul.Tensor"), ("", "aten.relu.default"), ("", "aten.mul.Tensor"),
        ("", "aten.sub.Tensor"), ("norm", "aten.mean.dim"), ("norm", "aten.sub.Tensor"),
        ("norm", "aten.pow.Tensor_Scalar")]
    assert all(op.verdict == "equal" for op in before)
    # equal bits are no proof of one order: the certificate finds both means' change
    cert = fprev.torch.certify(model, make, [1, 2, 3])
    assert [op.label() for op in cert.ops] == ["norm aten.mean.dim",
                                               "norm aten.mean.dim #1"]
    assert cert.breakpoints == {2: ["norm aten.mean.dim", "norm aten.mean.dim #1"]}
    assert cert.ops[0].trees[1] == first.trees[1]
    assert cert.ops[1].trees[3] == first.trees[8]


class RMSNorm(nn.Module):
    def forward(self, x):  # F.rms_norm decomposes into these ops, eps added in place
        return F.rms_norm(x, (x.shape[-1],))


def test_a_bfloat16_mlp_keeps_its_bits_but_not_its_order():
    # bfloat16 products are added in float32 and rounded once: the float32 orders of
    # M = 1 and M = 2 differ, the rounded bits of this input do not
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
    model = model.to(torch.bfloat16).eval()
    base = torch.randn(16, 64, generator=torch.Generator().manual_seed(6)).to(torch.bfloat16)

    def make(m):
        return base[:m]

    t = fprev.torch.trace(model, make, sizes=(1, 8))
    assert t.first is None, t.describe()
    assert all(op.dtypes == ["bfloat16"] for op in t.ops if op.op == "aten.addmm.default")
    cert = fprev.torch.certify(model, make, [1, 2, 3])
    assert cert.breakpoints == {2: ["0 aten.addmm.default", "2 aten.addmm.default"]}
    assert [op.trees[3].n for op in cert.ops] == [64, 128]


class SizeDependentScale(nn.Module):
    def forward(self, x):
        # an elementwise op whose constant depends on the batch size: no reduction
        return torch.softmax(x * (1.0 + 2.0 ** -20 * (x.shape[0] > 4)), -1)


def test_an_elementwise_divergence_is_typed_not_revealable():
    t = fprev.torch.trace(SizeDependentScale(), rows(16), sizes=(1, 8))
    first = t.first
    assert first.op == "aten.mul.Tensor"
    assert first.trees == {}
    assert isinstance(first.not_revealable, fprev.torch.NotRevealableError)
    assert isinstance(first.not_revealable, fprev.RevealError)
    assert "not a matrix product or a sum" in first.not_revealable.reason
    assert "not revealable" in first.describe()


def test_softmax_and_fused_attention_are_reductions_fprev_says_it_cannot_probe():
    cert = fprev.torch.certify(lambda x: torch.softmax(x, -1), rows(16), [1, 2, 3])
    (op,) = cert.ops
    assert op.op == "aten._softmax.default"
    assert "exponentials" in op.reason
    assert not cert.invariant and cert.uncertified == [op]

    def attention(x):
        q = x.view(len(x), 1, 4, 4)
        return F.scaled_dot_product_attention(q, q, q)

    cert = fprev.torch.certify(attention, rows(16), [1, 2])
    (op,) = cert.ops
    assert op.op.startswith("aten._scaled_dot_product")
    assert "fused attention" in op.reason


def test_a_reduction_over_the_batch_is_said_to_mix_rows():
    t = fprev.torch.trace(lambda x: x - x.mean(0), rows(32), sizes=(2, 8))
    first = t.first
    assert (first.op, first.index) == ("aten.mean.dim", (0,))
    assert first.trees[2].n == 2 and first.trees[8].n == 8
    assert "mixes other rows into this one" in first.describe()
    assert [op.verdict for op in t.ops] == ["differs", "differs"]


def test_the_recorder_keeps_row_slices_not_whole_tensors():
    from fprev import _torch_record as rec

    lin = nn.Linear(16, 64)
    x = rows(16)(8)
    plan = rec.RowPlan(3, {("", "aten.addmm.default", 0): [("batch", 0, 1)],
                           ("", "aten.t.default", 0): [("shared",)]})
    r = rec.Recorder(module=lin, plan=plan)
    r.own([x])
    with r.active():
        lin(x)
    t, addmm = r.calls
    assert addmm.parts[0][0] == "batch" and addmm.parts[0][1].shape == (1, 64)
    assert torch.equal(addmm.parts[0][1][0], lin(x)[3].detach())
    kind, digest, small = t.parts[0]
    assert kind == "shared" and len(digest) == 32 and small.shape == (16, 64)


def test_make_input_whose_row_differs_is_refused():
    def make(m):  # a new draw per size: row 0 differs
        return torch.randn(m, 8, generator=torch.Generator().manual_seed(m))

    with pytest.raises(fprev.torch.RowMismatchError, match="row 0 of input 0 differs"):
        fprev.torch.trace(nn.Linear(8, 4), make, sizes=(1, 8))
    assert issubclass(fprev.torch.RowMismatchError, fprev.RevealError)


def test_a_nondeterministic_model_is_refused():
    torch.manual_seed(3)

    def noisy(x):
        return x + torch.rand_like(x) * 1e-3

    with pytest.raises(fprev.torch.NondeterministicModelError, match="two runs"):
        fprev.torch.trace(noisy, rows(8), sizes=(1, 2))
    assert issubclass(fprev.torch.NondeterministicModelError, fprev.NondeterministicError)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return self.fc(x)


def test_an_in_place_update_of_a_buffer_is_refused_and_a_local_one_is_marked():
    with pytest.raises(fprev.torch.TraceInPlaceError, match="aten.add_.Tensor"):
        fprev.torch.trace(Counter(), rows(8), sizes=(1, 2))
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(inplace=True), RMSNorm()).eval()
    t = fprev.torch.trace(model, rows(8), sizes=(1, 2))
    relu = [op for op in t.ops if op.op == "aten.relu_.default"]
    assert len(relu) == 1 and relu[0].inplace and relu[0].module == "1"
    eps = [op for op in t.ops if op.op == "aten.add_.Scalar"]
    assert len(eps) == 1 and eps[0].inplace and eps[0].module == "2"
    assert not t.ops[0].inplace


def test_an_op_on_the_meta_device_is_refused():
    with pytest.raises(fprev.torch.TraceDeviceError, match="meta"):
        fprev.torch.trace(lambda x: x.to("meta") * 2, rows(8), sizes=(1, 2))


def test_bad_arguments():
    with pytest.raises(ValueError, match="row 1 is not in a batch of 1"):
        fprev.torch.trace(nn.Linear(8, 4), rows(8), sizes=(1, 8), row=1)
    with pytest.raises(ValueError, match="two batch sizes"):
        fprev.torch.trace(nn.Linear(8, 4), rows(8), sizes=(4,))


class ExtraOps(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        if len(x) > 4:  # ops only the larger sizes run, before the layer
            x = torch.relu(x.view(len(x), 16)) + torch.relu(-x) * 0
        return self.fc(x.view(len(x), 16))


def test_sizes_that_run_other_operations_are_aligned():
    t = fprev.torch.trace(ExtraOps().eval(), rows(16), sizes=(1, 8))
    assert {(u["op"], tuple(u["sizes"])) for u in t.unmatched} == {
        ("aten.view.default", (8,)), ("aten.relu.default", (8,)), ("aten.neg.default", (8,)),
        ("aten.mul.Tensor", (8,)), ("aten.add.Tensor", (8,))}
    assert t.first.op == "aten.addmm.default" and t.first.module == "fc"
    assert t.first.record.occurrence == 0
    assert t.first.trees[1] != t.first.trees[8]


def test_a_row_other_than_0_is_traced_at_its_own_slice():
    # (B, T, d) inputs: nn.Linear views them as (B * T, d), so request 2 is rows 8..11
    # of the product; one request (M = 4) and eight (M = 32) both run the
    # matrix-matrix kernel, whose order for a row does not depend on M here
    model = MLP(d=32, hidden=32, layers=1).eval()
    base = torch.randn(16, 4, 32, generator=torch.Generator().manual_seed(4))
    t = fprev.torch.trace(model, lambda m: base[:m], sizes=(3, 8), row=2)
    addmm = [op for op in t.ops if op.op == "aten.addmm.default"]
    assert [op.verdict for op in addmm] == ["equal", "equal"]
    assert addmm[0].shapes[3][1] == [12, 32] and addmm[0].shapes[8][1] == [32, 32]
    assert t.first is None, t.describe()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_mlp_is_traced_at_m_and_m_plus_1():
    model = MLP(d=256, hidden=256, layers=1).cuda().eval()
    base = rows(256)
    t = fprev.torch.trace(model, lambda m: base(m).cuda(), sizes=(1, 2, 3, 4, 8, 16, 32, 64))
    assert all(op.device in (None, "cuda:0") for op in t.ops)
    if t.first is not None:
        assert t.first.trees or t.first.not_revealable is not None
