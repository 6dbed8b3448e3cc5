package wick_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	wick "github.com/wick-agent/wick/sdk/go"
)

func TestKnowledge(t *testing.T) {
	alice, bob := client(t, aliceToken), client(t, bobToken)
	ctx := t.Context()
	coll, err := alice.CreateCollection(ctx, &wick.Collection{Name: "sdk-notes"})
	if err != nil {
		t.Fatal(err)
	}
	if coll.GetCollection() != "sdk-notes" || coll.GetDimensions() != 384 {
		t.Fatalf("created %v", coll)
	}
	docs := map[string]string{
		"ferry":  "# Ferry\n\nThe ferry to the island leaves every hour from pier seven.",
		"garden": "# Garden\n\nTomato plants need six hours of sun and deep watering.",
	}
	for id, text := range docs {
		added, err := alice.AddDocument(ctx, "sdk-notes", wick.NewDocument{ID: id, Content: text, Metadata: map[string]string{"kind": id}})
		if err != nil || added.GetEmbeddedChunks() != 1 {
			t.Fatalf("AddDocument %s: %v %v", id, added, err)
		}
	}
	again, err := alice.AddDocument(ctx, "sdk-notes", wick.NewDocument{ID: "ferry", Content: docs["ferry"], Metadata: map[string]string{"kind": "ferry"}})
	if err != nil || !again.GetUnchanged() {
		t.Fatalf("same text again: %v %v", again, err)
	}
	hits, err := alice.Search(ctx, "sdk-notes", "when does the ferry leave?", wick.TopK(1))
	if err != nil || len(hits) != 1 || hits[0].GetDocument() != "ferry" {
		t.Fatalf("Search = %v, %v", hits, err)
	}
	hits, err = alice.Search(ctx, "sdk-notes", "ferry or tomato plants", wick.Filter(map[string]string{"kind": "garden"}), wick.MinScore(0))
	if err != nil || len(hits) != 1 || hits[0].GetDocument() != "garden" {
		t.Fatalf("filtered Search = %v, %v", hits, err)
	}
	_, err = alice.Search(ctx, "sdk-notes", "x", wick.TopK(0))
	wantCode(t, "k 0", err, codes.InvalidArgument)
	_, err = bob.Search(ctx, "sdk-notes", "ferry")
	wantCode(t, "bob searching alice's collection", err, codes.NotFound)

	// An organisation's collection is shared by its members.
	if _, err := alice.CreateCollection(ctx, &wick.Collection{Name: "sdk-shared", Org: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.AddDocument(ctx, "acme.sdk-shared", wick.NewDocument{ID: "f", Content: docs["ferry"]}); err != nil {
		t.Fatal(err)
	}
	if hits, err := bob.Search(ctx, "acme.sdk-shared", "ferry pier"); err != nil || len(hits) != 1 {
		t.Fatalf("bob in acme: %v %v", hits, err)
	}

	list, err := alice.ListDocuments(ctx, "sdk-notes")
	if err != nil || len(list) != 2 {
		t.Fatalf("ListDocuments = %v, %v", list, err)
	}
	if n, err := alice.DeleteDocument(ctx, "sdk-notes", "garden"); err != nil || n != 1 {
		t.Fatalf("DeleteDocument = %d, %v", n, err)
	}
	colls, err := alice.ListCollections(ctx)
	if err != nil || len(colls) != 2 {
		t.Fatalf("ListCollections = %v, %v", colls, err)
	}
	for _, id := range []string{"sdk-notes", "acme.sdk-shared"} {
		if err := alice.DeleteCollection(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
