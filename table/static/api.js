// The HTTP API of docs/table.md and the page's error banner (#error).
//
// Every answer is JSON; an error is a 4xx/5xx answer {"error": "one line", "legal"?: [...]}, thrown here as an
// ApiError carrying the line, the status and the legal moves when the server listed them.

export class ApiError extends Error {
  constructor(message, status, legal = null) {
    super(message);
    this.status = status;
    this.legal = legal;
  }
}

/** `method` `url` with an optional JSON `body` (an object, or a string sent as is); the parsed answer. */
export async function requestJson(method, url, body = undefined) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, options);
  } catch (error) {
    throw new ApiError(`the server does not answer (${error.message}): is pedro-table still running?`, 0);
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  if (!response.ok) {
    const message = answer && typeof answer.error === "string" ? answer.error : `HTTP ${response.status}`;
    throw new ApiError(message, response.status, answer && Array.isArray(answer.legal) ? answer.legal : null);
  }
  return answer;
}

/** The text of `url` (for a record download read by the page itself). */
export async function requestText(url) {
  const response = await fetch(url);
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try {
      message = (await response.json()).error || message;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(message, response.status);
  }
  return response.text();
}

/** Show `message` in the #error banner (with the legal moves when the server listed them). */
export function showError(error) {
  const banner = document.getElementById("error");
  const text = banner.querySelector(".error-text");
  let message = error instanceof Error ? error.message : String(error);
  if (error instanceof ApiError && error.legal && !message.includes("legal")) {
    message += ` (legal: ${error.legal.join(", ")})`;
  }
  text.textContent = message;
  banner.hidden = false;
}

export function clearError() {
  document.getElementById("error").hidden = true;
}
