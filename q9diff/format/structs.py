"""Compatible names for callers of the old `q9diff.format.structs` (the hand-made layouts before formats/):
views of `q9diff.formats`, which holds every layout now. New code reads q9diff.formats itself."""

from q9diff.formats import context_binary as CB
from q9diff.formats import flatbuffer_slots as S
from q9diff.formats import pickles as P

FILE_MAGIC = CB.FILE_MAGIC
METADATA_OFFSET = CB.METADATA_OFFSET
PAGE = CB.PAGE
METADATA_ROOT_SLOT = S.METADATA_ROOT["binary_info"].slot
WRAPPER_SLOTS = S.slots(S.WRAPPER)
BINARY_INFO_SLOTS = S.slots(S.BINARY_INFO_V3)
GRAPH_V1_SLOTS = S.slots(S.GRAPH_V1)
DIRECTORY_SLOTS = S.slots(S.DIRECTORY)
RECORD_SLOTS = S.slots(S.RECORD)
OP_MARKER_XOR = P.OP_MARKER_XOR
