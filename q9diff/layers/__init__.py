"""`q9diff layers`: the first tensor where a build leaves its float model, on the x86 HTP emulator.

A QDQ model's activations are each quantized and dequantized (QuantizeLinear -> DequantizeLinear); making a
DequantizeLinear's output a graph output shows, after the compile, what the HTP computed for that tensor of
the float model (a *tap*; weights' and biases' DequantizeLinear are left alone, or ONNX Runtime's QNN EP
rejects the group). The rooms:

- `graph`: what an ONNX model's graph says: its source tensors in graph order with their producers, taps
  and inputs, the tensors fused away and the tap that stands in for each, block boundaries, and the tapped
  copy of a model.
- `targets`: what is compared: the candidate's graphs, the reference each is paired with, their inputs.
- `feeds`: the inputs: an .npz, seeded values, or the token and position inputs Genie feeds an LLM part.
- `sides`: the candidate compiled tapped (cached by content) and run on the emulator (never the CPU), the
  reference on the CPU (a float model) or the emulator (a recipe), and the tapped build against the
  untapped one in q9diff's own diff.
- `local`: the error each node adds itself, its computation redone on the CPU from the candidate's inputs.
- `figures`: cosine, max |Δ|, SQNR and the local SQNR, and the rule that names the first divergence, with
  the thresholds scripts/measure_layers.py measured (`measured.json`).
- `run`: block boundaries first, then inside the blocks that stand out; `result`: what it found, as
  `q9diff.layers/1`.
"""
