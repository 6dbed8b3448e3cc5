package wick

import (
	"context"
	"errors"
	"fmt"
	"io"

	agentv1 "github.com/wick-agent/wick/gen/wick/agent/v1"
)

// UploadChunkBytes is the size of each message of an upload.
const UploadChunkBytes = 256 << 10

// ListFiles lists a directory of an agent's workspace ("" is its root).
func (c *Client) ListFiles(ctx context.Context, agentID, dir string) ([]*FileEntry, error) {
	res, err := c.api.ListFiles(ctx, &agentv1.ListFilesRequest{AgentId: agentID, Path: dir})
	if err != nil {
		return nil, err
	}
	return res.GetEntries(), nil
}

// ReadFile returns a workspace file as text; bytes that are not UTF-8
// come as "base64:" and their base64 (use Download for raw bytes).
func (c *Client) ReadFile(ctx context.Context, agentID, path string) (string, error) {
	res, err := c.api.ReadFile(ctx, &agentv1.ReadFileRequest{AgentId: agentID, Path: path})
	if err != nil {
		return "", err
	}
	return res.GetContent(), nil
}

// WriteFile writes a workspace file from text and returns its size.
func (c *Client) WriteFile(ctx context.Context, agentID, path, content string) (int64, error) {
	res, err := c.api.WriteFile(ctx, &agentv1.WriteFileRequest{AgentId: agentID, Path: path, Content: content})
	if err != nil {
		return 0, err
	}
	return res.GetBytesWritten(), nil
}

// Upload writes everything r yields to a workspace file and returns the
// file's size. The file is replaced only by a complete upload: when r
// fails, the upload is abandoned and the old file, if any, stays.
func (c *Client) Upload(ctx context.Context, agentID, path string, r io.Reader) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends an abandoned upload on the server too
	st, err := c.api.UploadFile(ctx)
	if err != nil {
		return 0, err
	}
	send := func(m *agentv1.UploadFileRequest) (ended bool, err error) {
		err = st.Send(m)
		if errors.Is(err, io.EOF) {
			return true, nil // the server ended the call; CloseAndRecv says why
		}
		return false, err
	}
	ended, err := send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Header{Header: &agentv1.UploadFileHeader{AgentId: agentID, Path: path}}})
	if err != nil {
		return 0, err
	}
	buf := make([]byte, UploadChunkBytes)
	for !ended {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			// A new slice each time: Send may keep it until written.
			chunk := append([]byte(nil), buf[:n]...)
			if ended, err = send(&agentv1.UploadFileRequest{Msg: &agentv1.UploadFileRequest_Data{Data: chunk}}); err != nil {
				return 0, err
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return 0, fmt.Errorf("wick: read the upload of %s: %w", path, rerr)
		}
	}
	res, err := st.CloseAndRecv()
	if err != nil {
		return 0, err
	}
	return res.GetBytesWritten(), nil
}

// Download writes a workspace file's bytes to w and returns how many.
func (c *Client) Download(ctx context.Context, agentID, path string, w io.Writer) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the server's side when w fails
	st, err := c.api.DownloadFile(ctx, &agentv1.DownloadFileRequest{AgentId: agentID, Path: path})
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		k, err := w.Write(m.GetData())
		n += int64(k)
		if err != nil {
			return n, fmt.Errorf("wick: write the download of %s: %w", path, err)
		}
	}
}
