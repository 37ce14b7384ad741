"""Operations: the sample run, memory reports, replay, audit diff and lineage traces."""
