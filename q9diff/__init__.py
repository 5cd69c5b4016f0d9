"""q9diff: forensics for Qualcomm QNN HTP context binaries."""

__version__ = "0.1.0"
