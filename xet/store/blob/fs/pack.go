package fs

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Pack files keep the Backend's small blobs (the xorbs of small files, file records, SHA-256
// mappings, dedupe entries) so that a store of many small objects is a few large files, not four
// files per object, and so that one fsync makes a whole batch durable.
//
//	packs/<id>.pack   "XETPACK1", then records: magic "XPR1", crc32c, name length (u16), data
//	                  length (u32), name, data; the crc covers everything after itself
//	packs/<id>.idx    "XETPIDX1", then one entry per record: name length (u16), name, offset of
//	                  the data in the pack (u64), data length (u32), crc32c of the data, crc32c of
//	                  the entry's preceding bytes
//
// All integers are little-endian. A pack is appended to by one writer at a time: the one holding
// the exclusive flock on its .idx (held for the writer's life, so a crashed process releases it).
// A writer extends the .pack with zeros in 1 MiB steps ahead of its records (packWriter.grow) and
// cuts them when it lets the pack go; zeros are not a record, so recovery stops there and cuts them.
// Cutting keeps the .pack's modification time, which gc reads as the age of the blobs in it.
// The writer appends records, fdatasyncs the pack, then appends their index entries: an index entry
// never names bytes that are not durable, and entries appear in the order the records were written,
// so a batch's blobs become visible in order. The index is not fsynced: after a power loss it may
// lack its newest entries, and whoever next finds the pack unlocked with records past the index
// (a writer claiming it, or a reader loading it) re-indexes the whole, checksummed records there and
// truncates the rest (records of batches that were never acknowledged).
//
// A pack's entries are found through packs/<id>.sidx, its sorted index (sorted.go), derived from a
// prefix of its .idx; only the .idx entries past that prefix are read into a process's memory.
const (
	packDir = "packs"
	// packMaxBlob: blobs up to this size go into packs; larger ones stay files of their own.
	packMaxBlob = MaxPacked
	// packMaxBytes: a pack takes no new records once it is this large.
	packMaxBytes = 1 << 30

	packExt, idxExt = ".pack", ".idx"
	packMagic       = "XETPACK1"
	idxMagic        = "XETPIDX1"
	recMagic        = "XPR1"
	recHeader       = 4 + 4 + 2 + 4
)

// MaxPacked: blobs up to this size are kept in packs, many blobs to a file and one fsync to a
// batch; larger ones are files of their own.
const MaxPacked = 1 << 20

// crcTable is the CRC-32C of records and index entries.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// packEntry is where a packed blob's data lives.
type packEntry struct {
	name string
	off  int64 // of the data, in the pack
	n    int64
	crc  uint32 // of the data
}

// appendRecord appends the pack record of one blob to dst.
func appendRecord(dst []byte, name string, data []byte) []byte {
	start := len(dst)
	dst = append(dst, recMagic...)
	dst = append(dst, 0, 0, 0, 0) // crc, filled below
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(name)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(data)))
	dst = append(dst, name...)
	dst = append(dst, data...)
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+8:], crcTable))
	return dst
}

var errBadRecord = errors.New("not a whole, checksummed record")

// parseRecord reads the record at the start of b; it returns the entry (off relative to b) and the
// record's length.
func parseRecord(b []byte) (packEntry, int, error) {
	if len(b) < recHeader || string(b[:4]) != recMagic {
		return packEntry{}, 0, errBadRecord
	}
	nl := int(binary.LittleEndian.Uint16(b[8:]))
	dl := int64(binary.LittleEndian.Uint32(b[10:]))
	if nl == 0 || nl > blob.MaxNameLen || dl > packMaxBlob || int64(len(b)-recHeader-nl) < dl {
		return packEntry{}, 0, errBadRecord
	}
	total := recHeader + nl + int(dl)
	if crc32.Checksum(b[8:total], crcTable) != binary.LittleEndian.Uint32(b[4:]) {
		return packEntry{}, 0, errBadRecord
	}
	data := b[recHeader+nl : total]
	e := packEntry{name: string(b[recHeader : recHeader+nl]), off: int64(recHeader + nl), n: dl, crc: crc32.Checksum(data, crcTable)}
	return e, total, nil
}

// appendIndexEntry appends the index entry of e to dst.
func appendIndexEntry(dst []byte, e packEntry) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(e.name)))
	dst = append(dst, e.name...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.off))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(e.n))
	dst = binary.LittleEndian.AppendUint32(dst, e.crc)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// parseIndex parses the whole entries at the start of b (after the magic) and returns them and the
// bytes they take; it stops at the first incomplete or damaged entry (a write in progress, or the
// tail of a crash).
func parseIndex(b []byte) ([]packEntry, int) {
	out := make([]packEntry, 0, len(b)/96) // room for every entry of a name under 74 bytes

	used := 0
	for {
		r := b[used:]
		if len(r) < 2 {
			return out, used
		}
		nl := int(binary.LittleEndian.Uint16(r))
		total := 2 + nl + 8 + 4 + 4 + 4
		if nl == 0 || nl > blob.MaxNameLen || len(r) < total {
			return out, used
		}
		if crc32.Checksum(r[:total-4], crcTable) != binary.LittleEndian.Uint32(r[total-4:]) {
			return out, used
		}
		p := r[2+nl:]
		e := packEntry{
			name: string(r[2 : 2+nl]),
			off:  int64(binary.LittleEndian.Uint64(p)),
			n:    int64(binary.LittleEndian.Uint32(p[8:])),
			crc:  binary.LittleEndian.Uint32(p[12:]),
		}
		if e.off < int64(len(packMagic)) || e.n > packMaxBlob {
			return out, used
		}
		out = append(out, e)
		used += total
	}
}
