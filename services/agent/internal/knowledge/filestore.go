package knowledge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// logName is the embedded store's file in its directory.
const logName = "knowledge.log"

// FileStore is the embedded store: the Index in memory, and every change
// appended (and fsynced) to a log file of JSON lines that is replayed at
// start, so a restart keeps the collections. The log is rewritten without
// superseded records when they outnumber the live ones.
type FileStore struct {
	indexed
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenFileStore opens (creating) the store in dir. A torn last line — the
// process died while writing it — is cut off; any other bad line is an error.
func OpenFileStore(dir string, logger *slog.Logger) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("knowledge dir: %w", err)
	}
	path := filepath.Join(dir, logName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("knowledge log: %w", err)
	}
	// One process owns a directory: two writers would interleave records.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("knowledge dir %s is in use by another process (%w); give each process its own -knowledge-dir, or share through Redis", dir, err)
	}
	s := &FileStore{f: f, path: path}
	s.indexed = indexed{Index: NewIndex(), journal: s.append}
	records, good, err := s.replay()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() > good {
		if logger != nil {
			logger.Warn("knowledge log ends in a torn record; cutting it off", "path", path, "bytes", st.Size()-good)
		}
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("knowledge log: %w", err)
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	if live := s.live(); records > 2*live && records > 16 {
		if err := s.compact(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return s, nil
}

// replay applies every record; it returns how many there were and the
// offset after the last good one.
func (s *FileStore) replay() (int, int64, error) {
	r := bufio.NewReaderSize(s.f, 1<<20)
	var off int64
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return n, off, nil // a last line without '\n' is torn
		}
		if err != nil {
			return n, off, fmt.Errorf("knowledge log: %w", err)
		}
		var rec record
		if jerr := json.Unmarshal(bytes.TrimSpace(line), &rec); jerr != nil {
			if _, perr := r.Peek(1); errors.Is(perr, io.EOF) {
				return n, off, nil // torn last line
			}
			return n, off, fmt.Errorf("knowledge log %s at byte %d: %w", s.path, off, jerr)
		}
		if err := s.Index.apply(rec); err != nil {
			return n, off, fmt.Errorf("knowledge log %s at byte %d: %w", s.path, off, err)
		}
		off += int64(len(line))
		n++
	}
}

func (s *FileStore) live() int {
	s.Index.mu.RLock()
	defer s.Index.mu.RUnlock()
	n := 0
	for _, p := range s.Index.parts {
		for _, cs := range p {
			n += 1 + len(cs.docs)
		}
	}
	return n
}

// snapshot returns the records that rebuild the index as it is.
func (s *FileStore) snapshot() []record {
	s.Index.mu.RLock()
	var keys []Key
	var metas []Collection
	var docIDs [][]string
	for _, p := range s.Index.parts {
		for _, cs := range p {
			keys = append(keys, cs.meta.Key)
			metas = append(metas, cs.meta)
			var ids []string
			for id := range cs.docs {
				ids = append(ids, id)
			}
			docIDs = append(docIDs, ids)
		}
	}
	s.Index.mu.RUnlock()
	var out []record
	for i, k := range keys {
		out = append(out, record{Op: opCollection, Key: k, Collection: &metas[i]})
		for _, id := range docIDs[i] {
			if d, chunks, ok := s.Index.document(k, id); ok {
				out = append(out, documentRecord(k, d, chunks))
			}
		}
	}
	return out
}

// compact rewrites the log from the index, atomically (temp file + rename).
func (s *FileStore) compact() error {
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("knowledge log compaction: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("knowledge log compaction: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range s.snapshot() {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("knowledge log compaction: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("knowledge log compaction: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("knowledge log compaction: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		f.Close()
		return fmt.Errorf("knowledge log compaction: %w", err)
	}
	s.f.Close()
	s.f = f
	return nil
}

// append writes one record and syncs it, so that an answered write survives
// a crash.
func (s *FileStore) append(_ context.Context, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("knowledge log: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("knowledge log: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("knowledge log: %w", err)
	}
	return nil
}

// Close closes the log file.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}
