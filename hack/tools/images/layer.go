package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"
)

// writeLayer writes a gzipped tar holding only the binary at bin, as /name: owned by root, and
// readable and executable by everyone but writable by nobody, so the unprivileged user cannot
// change it. The bytes depend only on the binary, name and mtime, so the digest is reproducible.
func writeLayer(dst, bin, name string, mtime time.Time) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	zw, err := gzip.NewWriterLevel(out, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o555,
		Size:     info.Size(),
		ModTime:  mtime,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if n, err := io.Copy(tw, src); err != nil {
		return err
	} else if n != info.Size() {
		return fmt.Errorf("%s changed while it was copied into the layer", bin)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}
