"""`q9diff layers`: the first tensor where a build leaves its float model, on the x86 HTP emulator.

A QDQ model's activations are each quantized and dequantized (QuantizeLinear -> DequantizeLinear); making a
DequantizeLinear's output a graph output shows, after the compile, what the HTP computed for that tensor of
the float model (a *tap*; weights' and biases' DequantizeLinear are left alone, or ONNX Runtime's QNN EP
rejects the group). The rooms:

- `graph`: what an ONNX model's graph says: its source tensors in graph order with their producers, taps
  and consumers, the tensors fused away and the tap that stands in for each, block boundaries, and the
  tapped copy of a model (written where its content digest says, so its compile is cached).
- `figures`: cosine, max |Δ| and SQNR of one tensor against the reference, and the rule that names the
  first divergence, with the threshold measured by scripts/measure_layers.py (`measured.json`).
- `sides`: the candidate compiled tapped and run on the emulator (never the CPU), the reference on the CPU
  (a float model) or the emulator (a recipe), and the tapped build against the untapped one.
- `feeds`: the inputs: an .npz, seeded values, or the token and position inputs Genie feeds an LLM part.
- `run`: block boundaries first, then narrowing inside the first that diverges; `result`: what it found,
  as `q9diff.layers/1`.
"""
