package xorb

import (
	"fmt"
)

// appendLZ4Frame frames src as xet-core does (encoder.appendFrame).
func appendLZ4Frame(dst, src []byte) []byte { return new(encoder).appendFrame(dst, src) }

// decodeLZ4Frame is decodeFrames returning dst unchanged on error.
func decodeLZ4Frame(dst, src []byte, maxSize int) ([]byte, error) {
	out, err := decodeFrames(dst, src, maxSize)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendTestRecord is encoder.appendRecord with fresh scratch space.
func appendTestRecord(dst, raw []byte, scheme Scheme) []byte {
	out, _ := new(encoder).appendRecord(dst, raw, scheme, false)
	return out
}

// decodeAllRecords decodes every record of b (a records region, or a whole object up to its
// footer), calling fn with each chunk's index and raw bytes.
func decodeAllRecords(b []byte, fn func(i int, raw []byte) error) error {
	var d decoder
	for i := 0; len(b) > 0; i++ {
		if isFooterPrefix(b) {
			return nil
		}
		raw, _, n, err := d.decodeRecord(nil, b)
		if err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		if err := fn(i, raw); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// LZ4 frame descriptor bits, for building frames by hand in tests.
const (
	flgVersion1    = 0x40
	flgIndependent = 0x20
	flgBlockSum    = 0x10
	flgContentSize = 0x08
	flgContentSum  = 0x04
	flgReserved    = 0x02
	flgDictID      = 0x01
)
