-- name: CreateAccount :one
INSERT INTO accounts (
  owner, balance
) VALUES (
  $1, $2
)
RETURNING *;

-- name: GetAccount :one
SELECT * FROM accounts
WHERE id = $1 LIMIT 1;

-- name: ListAccounts :many
SELECT * FROM accounts
ORDER BY id;

-- name: Deposit :exec
UPDATE accounts SET balance = balance + $2
WHERE id = $1;

-- name: Transfer :execrows
WITH debit AS (
  UPDATE accounts SET balance = accounts.balance - @amount
  WHERE accounts.id = @from_id AND EXISTS (SELECT 1 FROM accounts AS credited WHERE credited.id = @to_id)
  RETURNING id
)
UPDATE accounts SET balance = accounts.balance + @amount
WHERE accounts.id = @to_id AND EXISTS (SELECT 1 FROM debit);
