"""What an error number, a C name, a word of q9diff's reports or a pasted log of QNN, Genie, FastRPC,
ONNX Runtime's QNN EP or ExecuTorch's QNN backend means: `q9diff explain`.

The knowledge is data beside this file: `catalogue.json`, every message format string Qualcomm's libraries
and the frameworks' QNN layers can print, each with the libraries and versions that hold it (built from the
libraries by scripts/build_explain_catalogue.py); `codes.json`, every QNN and Genie error value with its C
name and API, the meanings of FastRPC's error numbers, the messages whose meaning and causes q9diff knows,
and the causes, each marked measured here, documented, or reported in public threads; `libraries.json`,
what each shared library a log names is and where it is looked for; `terms.json`, the words q9diff's
reports use. Sources in SOURCES.md.

The rooms: `query` (the entry: `explain`, `Explanation`, the JSON), `catalogue` (the messages and their
matcher), `lines` (one line taken apart), `log` (what a line is), `verdict` (the combined verdict), `codes`
(error numbers and causes). A log is read line by line: every line is explained, recognised as context, or
said to be unknown; then one verdict names the decisive line, the layer that failed, the causes ranked for
the lines at hand and the command that tells which applies.
"""
