"""The parts of an ELF shared object q9diff reads to find a runtime library's version: the file header and the
section header table (the System V gABI, "Object Files": the ELF header and section header entries; 32- and
64-bit, either byte order, as e_ident's EI_CLASS and EI_DATA say).

Evidence: the runtime libraries of onnxruntime-qnn 2.3.0-2.7.0 (QAIRT 2.47-2.51): libQnnHtp.so, libGenie.so,
libQnnHtpNetRunExtensions.so, ELF64 little-endian, each carries `AISW_VERSION: x.y.z` (and libQnnHtp.so its
build id) in `.rodata` (measured with q9diff/load/library.py's reader against a search of the whole file).
"""

from construct import Bytes, Const, Int8ul, Int16ub, Int16ul, Int32ub, Int32ul, Int64ub, Int64ul, Struct

ELF_MAGIC = b"\x7fELF"
IDENT_SIZE = 16
Ident = Struct(
    "magic" / Const(ELF_MAGIC),
    "ei_class" / Int8ul,  # 1: 32-bit, 2: 64-bit
    "ei_data" / Int8ul,  # 1: little-endian, 2: big-endian
    "rest" / Bytes(IDENT_SIZE - 6),
)
CLASSES = {1: 32, 2: 64}
ORDERS = {1: "little", 2: "big"}
SHT_NOBITS = 8  # a section that occupies no bytes of the file (.bss)
SHN_UNDEF = 0
SHN_XINDEX = 0xFFFF  # e_shstrndx escaped: the index is section 0's sh_link


def _ints(little: bool):
    return (Int16ul, Int32ul, Int64ul) if little else (Int16ub, Int32ub, Int64ub)


def header(bits: int, little: bool) -> Struct:
    """The ELF header after e_ident."""
    half, word, xword = _ints(little)
    addr = xword if bits == 64 else word
    return Struct(
        "e_type" / half,
        "e_machine" / half,
        "e_version" / word,
        "e_entry" / addr,
        "e_phoff" / addr,
        "e_shoff" / addr,
        "e_flags" / word,
        "e_ehsize" / half,
        "e_phentsize" / half,
        "e_phnum" / half,
        "e_shentsize" / half,
        "e_shnum" / half,  # 0 with e_shoff set: the count is section 0's sh_size
        "e_shstrndx" / half,
    )


def section(bits: int, little: bool) -> Struct:
    """One section header entry."""
    _, word, xword = _ints(little)
    addr = xword if bits == 64 else word
    return Struct(
        "sh_name" / word,  # an offset into the section name table
        "sh_type" / word,
        "sh_flags" / addr,
        "sh_addr" / addr,
        "sh_offset" / addr,
        "sh_size" / addr,
        "sh_link" / word,
        "sh_info" / word,
        "sh_addralign" / addr,
        "sh_entsize" / addr,
    )
