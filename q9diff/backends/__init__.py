"""Compile backends, each behind one small interface (`base`), chosen by name (`registry`)."""
