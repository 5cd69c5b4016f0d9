"""The `ssh://user@host[:port]` runner: run context binaries on an EVK, compare locally.

The x86 emulator computes a soc_model 0 build and a soc_model 77 build bit-identically, so the
motivating bug (a generic-SoC build that loads and computes garbage) shows only on Hexagon hardware.
This runner takes the binaries there through the system OpenSSH client and brings the outputs back,
with one of two remote tools:

- `tool="q9diff"`: q9diff's own worker (`python -m q9diff.runners.worker`, onnxruntime-qnn on the
  device) over the ssh channel, the same framed protocol as the local runner. There is no unshared
  rebuild here: weight-shared binaries crash only the x86 emulator, and a device is where they must run.
- `tool="qnn-net-run"`: Qualcomm's `qnn-net-run --retrieve_context`, fed native raw files and an input
  list, its `Result_0` raw files pulled back and read with the graph's own dtypes and shapes.

Genie bundles run with Qualcomm's `genie-t2t-run` (`SshRunner.genie`): the bundle's ctx-bins,
tokenizer and backend extensions are pushed under flat names beside a patched `genie_config.json` that
names them relative to the remote directory (genie-t2t-run runs there), greedy (temp 0, top-k 1, as
q9diff.runners.genie patches it) and bounded by `dialog.max-num-tokens`, and the prompt goes as a
`--tokens_file`. Read from a public copy of Qualcomm's genie-t2t-run source (main.cpp, a release with
--tokens_file): a token query prints `[PROMPT TOKENS]: <ids>` and answers token ids, not text
(`[BEGIN]: <id> <id> … [END]`, from GenieDialog_tokenQuery's callback), that release prints no `[KPIS]:`
block, and a query that does not end in SUCCESS (e.g. the context is full) is "Failed to query with
tokens." and exit status 1.

Trust: host keys are always verified (`StrictHostKeyChecking=yes`, `BatchMode=yes`, an explicit
`UserKnownHostsFile` when given); an unknown or changed key is a one-line error saying how to add
the key, never a silent trust. Authentication is by key or agent only: no password goes on a command
line, and error messages carry ssh's own diagnostic line, never the environment or a key's contents.

qnn-net-run formats (from its `--help` text as Qualcomm's docs print it, and public scripts that drive
it on devices):
- `--input_list FILE`: one line per inference, `name:=path name:=path ...` (inputs by tensor name);
  for a context holding several graphs, a comma-separated list of input list files, one per graph
  in the context's order, with `__` for a graph not to execute.
- `--use_native_input_files` / `--use_native_output_files`: raw files in the graph's own data type
  (without them qnn-net-run reads and writes float32, a trap for fp16 or quantized I/O).
- outputs: `<output_dir>/Result_<i>/<output tensor name>.raw` for inference i.
Not found in the docs: how a tensor name holding characters a file name cannot (`/`, `:`) is written,
and where a multi-graph run puts each graph's `Result_<i>`. `output_files` therefore accepts the name
as it is and with each character outside `[A-Za-z0-9_.-]` replaced by `_`, in `Result_<i>` and in
`<graph name>/Result_<i>`, and refuses to guess between two candidates.
"""
