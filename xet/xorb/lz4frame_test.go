package xorb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/pierrec/lz4/v4"
)

func TestXXH32(t *testing.T) {
	// Published xxHash32 (seed 0) values.
	for _, c := range []struct {
		in   string
		want uint32
	}{
		{"", 0x02CC5D05},
		{"a", 0x550D7456},
		{"abc", 0x32D153FF},
		{"Nobody inspects the spammish repetition", 0xE2293B2F},
	} {
		if got := xxh32Sum([]byte(c.in)); got != c.want {
			t.Errorf("xxh32(%q) = %08x, want %08x", c.in, got, c.want)
		}
	}
	// Streaming in odd pieces equals one shot.
	data := vectors.SplitMix(1000, 5)
	var x xxh32
	x.reset(0)
	for p := data; len(p) > 0; {
		n := min(len(p), 1+len(p)%7)
		x.write(p[:n])
		p = p[n:]
	}
	if x.sum() != xxh32Sum(data) {
		t.Errorf("streaming xxh32 %08x != one-shot %08x", x.sum(), xxh32Sum(data))
	}
}

func TestAppendLZ4FrameLayout(t *testing.T) {
	small, large := frameHeaderVector(t)
	for _, c := range []struct {
		n      int
		header []byte
	}{{1, small}, {65536, small}, {65537, large}, {131072, large}} {
		src := csvText(c.n, uint64(c.n))
		f := appendLZ4Frame(nil, src)
		if !bytes.Equal(f[:7], c.header) {
			t.Errorf("%d bytes: header % x, want % x", c.n, f[:7], c.header)
		}
		word := binary.LittleEndian.Uint32(f[7:])
		size := int(word &^ lz4UncompressedBit)
		if 11+size+4 != len(f) || !bytes.Equal(f[len(f)-4:], []byte{0, 0, 0, 0}) {
			t.Errorf("%d bytes: not one block and an end mark (block %d, frame %d)", c.n, size, len(f))
		}
		if (word&lz4UncompressedBit != 0) != (c.n == 1) {
			t.Errorf("%d bytes: uncompressed flag %v", c.n, word&lz4UncompressedBit != 0)
		}
		out, err := decodeLZ4Frame(nil, f, c.n)
		if err != nil || !bytes.Equal(out, src) {
			t.Errorf("%d bytes: round trip: %v", c.n, err)
		}
	}
	// Incompressible data is stored as a raw block.
	src := vectors.SplitMix(4096, 1)
	f := appendLZ4Frame(nil, src)
	if w := binary.LittleEndian.Uint32(f[7:]); w != uint32(len(src))|lz4UncompressedBit || !bytes.Equal(f[11:11+len(src)], src) {
		t.Errorf("incompressible: block word %08x", w)
	}
	// Empty input: header and end mark.
	if f := appendLZ4Frame(nil, nil); !bytes.Equal(f, append(bytes.Clone(small), 0, 0, 0, 0)) {
		t.Errorf("empty frame % x", f)
	}
	// Inputs larger than xet-core ever frames still round-trip.
	big := csvText(5<<20, 4)
	out, err := decodeLZ4Frame(nil, appendLZ4Frame(nil, big), len(big))
	if err != nil || !bytes.Equal(out, big) {
		t.Errorf("5 MiB round trip: %v", err)
	}
}

// lz4Input is data with matches inside and across 64 KiB blocks, text and incompressible parts.
func lz4Input() []byte {
	rnd := vectors.SplitMix(40000, 11)
	var b []byte
	b = append(b, csvText(150000, 12)...)
	b = append(b, rnd...)
	b = append(b, rnd...) // crosses a 64 KiB block boundary: linked blocks refer back to it
	b = append(b, csvText(50000, 13)...)
	return b
}

func TestLZ4InteropToolDecodesOurs(t *testing.T) {
	tool := lz4Tool(t)
	for _, src := range [][]byte{csvText(1000, 1), csvText(65536, 2), csvText(131072, 3), vectors.SplitMix(100000, 4), lz4Input()} {
		cmd := exec.Command(tool, "-d", "-c")
		cmd.Stdin = bytes.NewReader(appendLZ4Frame(nil, src))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lz4 -d on our %d-byte frame: %v: %s", len(src), err, stderr.String())
		}
		if !bytes.Equal(out, src) {
			t.Errorf("lz4 -d decoded our %d-byte frame to %d different bytes", len(src), len(out))
		}
	}
	// Records too: the payload of every scheme-1 record is a frame the tool reads.
	data := csvText(80000, 7)
	rec := appendTestRecord(nil, data, SchemeLZ4)
	cmd := exec.Command(tool, "-d", "-c")
	cmd.Stdin = bytes.NewReader(rec[8:])
	out, err := cmd.Output()
	if err != nil || !bytes.Equal(out, data) {
		t.Errorf("lz4 -d on a record payload: %v", err)
	}
}

func TestLZ4InteropOursDecodesTool(t *testing.T) {
	tool := lz4Tool(t)
	dir := t.TempDir()
	src := lz4Input()
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, src, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args    []string
		flgSet  byte // FLG bits that must be set
		flgZero byte // and clear
		bd      byte
	}{
		// The tool picks at most the block size that fits the input (1 MiB here).
		{nil, flgIndependent | flgContentSum, flgBlockSum | flgContentSize, 0x60},
		{[]string{"-B5", "-BD"}, flgContentSum, flgIndependent, 0x50}, // linked only with several blocks
		{[]string{"-B4", "-BD"}, 0, flgIndependent, 0x40},
		{[]string{"-B4"}, flgIndependent, 0, 0x40},
		{[]string{"-B5", "-BD", "-BX"}, flgBlockSum, flgIndependent, 0x50},
		{[]string{"-B6", "--content-size"}, flgContentSize, 0, 0x60},
		{[]string{"-B7", "--no-frame-crc", "-BX"}, flgBlockSum, flgContentSum, 0x60},
		{[]string{"-B4", "-BD", "--content-size", "-BX", "-9"}, flgContentSize | flgBlockSum | flgContentSum, flgIndependent, 0x40},
		{[]string{"-B4", "--no-frame-crc", "-1"}, 0, flgContentSum, 0x40},
	}
	for i, c := range cases {
		name := strings.Join(c.args, " ")
		out := filepath.Join(dir, "out")
		args := append([]string{"-q", "-f"}, c.args...)
		if b, err := exec.Command(tool, append(args, in, out)...).CombinedOutput(); err != nil {
			t.Fatalf("lz4 %s: %v: %s", name, err, b)
		}
		frame, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		flg, bd := frame[4], frame[5]
		if flg&c.flgSet != c.flgSet || flg&c.flgZero != 0 || bd != c.bd {
			t.Fatalf("lz4 %s wrote FLG %02x BD %02x: the case does not test what it says", name, flg, bd)
		}
		got, err := decodeLZ4Frame([]byte("keep"), frame, len(src))
		if err != nil {
			t.Errorf("case %d (lz4 %s): %v", i, name, err)
			continue
		}
		if string(got[:4]) != "keep" || !bytes.Equal(got[4:], src) {
			t.Errorf("case %d (lz4 %s): decoded %d bytes, not the input", i, name, len(got)-4)
		}
		if _, err := decodeLZ4Frame(nil, frame, len(src)-1); err == nil || !errors.Is(err, ErrLZ4) {
			t.Errorf("case %d (lz4 %s): limit one below the content: err %v", i, name, err)
		}
		// Corruption anywhere in a checksummed block or content is detected.
		if flg&(flgBlockSum|flgContentSum) != 0 {
			bad := bytes.Clone(frame)
			bad[len(bad)-6] ^= 0x01
			if _, err := decodeLZ4Frame(nil, bad, len(src)); err == nil {
				t.Errorf("case %d (lz4 %s): flipped bit not detected", i, name)
			}
		}
	}
	// 4 MiB blocks need a bigger input.
	big := bytes.Repeat(src, 16) // over 4 MiB: two blocks
	if err := os.WriteFile(in+"big", big, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, "-q", "-f", "-B7", "-BD", in+"big", in+"big.lz4").CombinedOutput(); err != nil {
		t.Fatalf("lz4 -B7: %v: %s", err, b)
	}
	frame, err := os.ReadFile(in + "big.lz4")
	if err != nil {
		t.Fatal(err)
	}
	if frame[5] != 0x70 || frame[4]&flgIndependent != 0 {
		t.Fatalf("lz4 -B7 -BD wrote FLG %02x BD %02x", frame[4], frame[5])
	}
	if got, err := decodeLZ4Frame(nil, frame, len(big)); err != nil || !bytes.Equal(got, big) {
		t.Errorf("4 MiB linked blocks: %v", err)
	}
	// Two concatenated frames with a skippable frame between them decode as one stream, as the
	// tool does.
	f1 := appendLZ4Frame(nil, src[:1000])
	skip := []byte{0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	f2 := appendLZ4Frame(nil, src[1000:3000])
	stream := append(append(append([]byte{}, f1...), skip...), f2...)
	got, err := decodeLZ4Frame(nil, stream, 3000)
	if err != nil || !bytes.Equal(got, src[:3000]) {
		t.Errorf("concatenated frames: %v", err)
	}
	cmd := exec.Command(tool, "-d", "-c")
	cmd.Stdin = bytes.NewReader(stream)
	if out, err := cmd.Output(); err != nil || !bytes.Equal(out, src[:3000]) {
		t.Errorf("the tool disagrees on the concatenated stream: %v", err)
	}
	// The legacy format (lz4 -l) decodes too: pierrec's frame reader reads it.
	out := filepath.Join(dir, "legacy")
	if b, err := exec.Command(tool, "-q", "-f", "-l", in, out).CombinedOutput(); err != nil {
		t.Fatalf("lz4 -l: %v: %s", err, b)
	}
	legacy, _ := os.ReadFile(out)
	if got, err := decodeLZ4Frame(nil, legacy, len(src)); err != nil || !bytes.Equal(got, src) {
		t.Errorf("legacy frame: %d bytes, err %v", len(got), err)
	}
}

func TestDecodeLZ4FrameErrors(t *testing.T) {
	src := csvText(3000, 1)
	good := appendLZ4Frame(nil, src)
	withHC := func(f []byte) []byte {
		// Recompute the header checksum over the descriptor (FLG..), given no optional fields.
		f[6] = byte(xxh32Sum(f[4:6]) >> 8)
		return f
	}
	mut := func(f func([]byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"short magic", []byte{4, 0x22}, "EOF"},
		{"bad magic", mut(func(f []byte) []byte { f[0] = 5; return f }), "bad magic"},
		{"version", mut(func(f []byte) []byte { f[4] = 0x80 | 0x20; return withHC(f) }), "version"},
		{"reserved FLG", mut(func(f []byte) []byte { f[4] |= flgReserved; return withHC(f) }), "reserved"},
		{"reserved BD", mut(func(f []byte) []byte { f[5] |= 0x01; return withHC(f) }), "reserved"},
		{"block size id", mut(func(f []byte) []byte { f[5] = 0x30; return withHC(f) }), "block size"},
		{"dict id", mut(func(f []byte) []byte { f[4] |= flgDictID; return withHC(f) }), ""},
		{"header checksum", mut(func(f []byte) []byte { f[6] ^= 0xFF; return f }), "header checksum"},
		{"truncated block", good[:len(good)-10], "present"},
		{"missing end mark", good[:len(good)-4], "end mark"},
		{"trailing garbage", append(bytes.Clone(good), 1, 2, 3), "EOF"},
		{"trailing frame garbage", append(bytes.Clone(good), 1, 2, 3, 4, 5), "bad magic"},
		{"block larger than BD", mut(func(f []byte) []byte { binary.LittleEndian.PutUint32(f[7:], 70000); return f }), "block size"},
		{"skippable beyond input", []byte{0x50, 0x2A, 0x4D, 0x18, 10, 0, 0, 0, 1}, "EOF"},
	}
	for _, c := range cases {
		out, err := decodeLZ4Frame([]byte("dst"), c.b, 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrLZ4) {
			t.Errorf("%s: err %v, want ErrLZ4 mentioning %q", c.name, err, c.want)
		}
		if string(out) != "dst" {
			t.Errorf("%s: dst changed on error: %q", c.name, out)
		}
	}
	// Content size bigger than the limit is refused before decoding or allocating.
	f := []byte{0x04, 0x22, 0x4D, 0x18, 0x60 | flgContentSize, 0x70}
	f = binary.LittleEndian.AppendUint64(f, 1<<40)
	f = append(f, byte(xxh32Sum(f[4:14])>>8), 0, 0, 0, 0)
	if _, err := decodeLZ4Frame(nil, f, 1<<20); err == nil || !strings.Contains(err.Error(), "content size") {
		t.Errorf("huge content size: %v", err)
	}
	// A content size that disagrees with the content.
	f = []byte{0x04, 0x22, 0x4D, 0x18, 0x60 | flgContentSize, 0x40}
	f = binary.LittleEndian.AppendUint64(f, 5)
	f = append(f, byte(xxh32Sum(f[4:14])>>8))
	f = binary.LittleEndian.AppendUint32(f, 3|lz4UncompressedBit)
	f = append(f, 'a', 'b', 'c', 0, 0, 0, 0)
	if _, err := decodeLZ4Frame(nil, f, 100); err == nil || !strings.Contains(err.Error(), "content size") {
		t.Errorf("content size mismatch: %v", err)
	}
}

// TestDecodeLZ4FrameBounded: a tiny frame claiming a huge output never makes the decoder allocate
// more than maxSize (or what the input can expand to).
func TestDecodeLZ4FrameBounded(t *testing.T) {
	// One compressed block: a literal then a match of length 4 MiB-ish via 255-bytes, 4 MiB blocks.
	blk := []byte{0x1F, 'a', 1, 0}
	for i := 0; i < 2000; i++ {
		blk = append(blk, 255)
	}
	blk = append(blk, 0, 0x10, 'b') // end of match length; last literal
	f := []byte{0x04, 0x22, 0x4D, 0x18, 0x60, 0x70}
	f = append(f, byte(xxh32Sum(f[4:6])>>8))
	f = binary.LittleEndian.AppendUint32(f, uint32(len(blk)))
	f = append(f, blk...)
	f = append(f, 0, 0, 0, 0)
	out, err := decodeLZ4Frame(nil, f, 1<<30)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if cap(out) > 255*len(blk)+64 {
		t.Errorf("allocated %d bytes for a %d-byte block", cap(out), len(blk))
	}
	if _, err := decodeLZ4Frame(nil, f, 1000); err == nil {
		t.Errorf("limit 1000 not enforced (content %d bytes)", len(out))
	}
	if out2, err := decodeLZ4Frame(nil, f, len(out)); err != nil || cap(out2) > len(out) || !bytes.Equal(out2, out) {
		t.Errorf("exact limit: err %v, cap %d for %d bytes", err, cap(out2), len(out))
	}
}

// Each frame header written (one per block-size id) is one pierrec's frame reader accepts: its
// checksum byte is right, and a frame that starts with it decodes.
func TestFrameHeadersAreValid(t *testing.T) {
	data := []byte("a block stored as it is, in a frame with each header")
	for id := 4; id <= 7; id++ {
		frame := append([]byte(nil), frameHeaders[id][:]...)
		frame = binary.LittleEndian.AppendUint32(frame, uint32(len(data))|1<<31) // an uncompressed block
		frame = append(frame, data...)
		frame = binary.LittleEndian.AppendUint32(frame, 0) // the end mark
		got, err := io.ReadAll(lz4.NewReader(bytes.NewReader(frame)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("block-size id %d: pierrec read %q, %v", id, got, err)
		}
	}
}
