CREATE TABLE accounts (
  id      bigserial PRIMARY KEY,
  owner   text      NOT NULL,
  balance bigint    NOT NULL
);
