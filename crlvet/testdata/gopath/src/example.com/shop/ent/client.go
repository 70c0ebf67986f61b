// Package ent is the shape of an ent generated client: Client.Tx returns
// a *Tx with Commit, Rollback and Client.
package ent

import (
	"context"
	"database/sql"

	"entgo.io/ent/dialect"
)

type config struct{ driver dialect.Driver }

type Client struct {
	config
	User *UserClient
}

type Tx struct {
	config
	User *UserClient
}

type UserClient struct{ config }

func (c *Client) Tx(ctx context.Context) (*Tx, error)                           { return nil, nil }
func (c *Client) BeginTx(ctx context.Context, opts *sql.TxOptions) (*Tx, error) { return nil, nil }
func (tx *Tx) Commit() error                                                    { return nil }
func (tx *Tx) Rollback() error                                                  { return nil }
func (tx *Tx) Client() *Client                                                  { return nil }
func (c *UserClient) Add(ctx context.Context, name string) (int, error)         { return 0, nil }
