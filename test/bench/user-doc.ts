/** The benchmark's `GET /v1/user` answer: a fixed JSON document of about 300 bytes. */
export const USER_JSON = JSON.stringify({
  id: 42,
  login: "ada",
  name: "Ada Lovelace",
  email: "ada@example.com",
  company: "Analytical Engines Ltd",
  location: "London",
  bio: "Wrote the first published algorithm intended for a machine.",
  spaces: ["handbook", "api-docs", "notes"],
  created_at: "1843-07-10T00:00:00Z",
  updated_at: "1852-11-27T00:00:00Z",
});

/** Any other path's answer (404). */
export const NOT_FOUND_JSON = '{"message":"no such resource"}';
