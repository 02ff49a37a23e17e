package everything

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// MIME types of the sample media.
const (
	pngMIME = "image/png"
	wavMIME = "audio/wav"
)

// media is the sample binary content the server returns, base64-encoded as
// MCP carries it. It is built once per server and only read afterwards.
type media struct {
	png string // a 1x1 PNG
	wav string // a WAV file holding one sample of silence
}

func newMedia() media {
	return media{png: onePixelPNG(), wav: silentWAV()}
}

// onePixelPNG encodes a single opaque pixel as a PNG.
func onePixelPNG() string {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0x20, G: 0x80, B: 0xd0, A: 0xff})
	var buf bytes.Buffer
	// Encoding an in-memory image into a bytes.Buffer cannot fail.
	_ = png.Encode(&buf, img)
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// silentWAV encodes a minimal RIFF/WAVE file: PCM, mono, 16-bit, 8 kHz, one
// zero sample.
func silentWAV() string {
	const (
		sampleRate    = 8000
		channels      = 1
		bitsPerSample = 16
		blockAlign    = channels * bitsPerSample / 8
		dataBytes     = 1 * blockAlign
		fmtChunkBytes = 16
	)
	var buf bytes.Buffer
	w := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	w(uint32(4 + (8 + fmtChunkBytes) + (8 + dataBytes)))
	buf.WriteString("WAVE")
	buf.WriteString("fmt ")
	w(uint32(fmtChunkBytes))
	w(uint16(1)) // PCM
	w(uint16(channels))
	w(uint32(sampleRate))
	w(uint32(sampleRate * blockAlign)) // byte rate
	w(uint16(blockAlign))
	w(uint16(bitsPerSample))
	buf.WriteString("data")
	w(uint32(dataBytes))
	w(int16(0))
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
