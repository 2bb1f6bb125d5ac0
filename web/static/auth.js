// Asks for the server's bearer token once (a dialog, not window.prompt, so the page keeps
// drawing); api.js keeps it in sessionStorage for the rest of the session.

export function tokenPrompt(api, onToken) {
  const dialog = document.getElementById('token-dialog');
  const input = document.getElementById('token-input');
  const reason = document.getElementById('token-reason');

  dialog.addEventListener('close', () => {
    if (dialog.returnValue !== 'ok' || !input.value.trim()) return;
    api.token = input.value.trim();
    input.value = '';
    onToken();
  });

  // The refresh loop may hit several 401s in a row: ask once until answered.
  return (refused) => {
    if (dialog.open) return;
    reason.textContent = refused
      ? 'The server refused the token this page sent. Enter the right one.'
      : 'This server protects its memory routes with a bearer token.';
    dialog.showModal();
    input.focus();
  };
}
