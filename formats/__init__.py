"""The byte layouts of QNN HTP context binaries and the files that carry them, as construct definitions.

This is the spec; `q9diff.read` walks files with it and keeps no layout of its own. One definition
parses (the walker) and builds (tests/test_formats.py, scripts/fuzz.py, the hostile-input tests). Installed
as `q9diff.formats` (pyproject.toml maps this folder); every definition carries its evidence.

- `context_binary`: the file headers (QNN 2.22, 2.25 on), the blob header by blob version, graphBlobInfo,
  contextMetadata, the WEIGHTS/0 header;
- `pickles`: the barrel and single-pickle headers with their tag-dispatched records, the aux records, the
  op record, the weights descriptor, the barrel trailer;
- `flatbuffer_slots`: the slot maps of the metadata and record directory FlatBuffers;
- `containers`: LiteRT `.tflite` slot maps and its dispatch op's FlexBuffer payload;
- `pte`: the ExecuTorch `.pte` header, its Program's slot maps, the QnnContextCustomProtocol header before
  each QNN context binary, and the QnnExecuTorchOptions compile spec's slot maps.
"""
