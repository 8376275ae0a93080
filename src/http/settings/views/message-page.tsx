/** A plain page that explains why a request was not done (expired link, signed out, refused form, 404). */
import type { ComponentChildren } from 'preact';
import { Layout, type SignedInShell } from './layout.js';

export interface MessagePageProps {
  title: string;
  shell: SignedInShell | null;
  children: ComponentChildren;
}

export function MessagePage({ title, shell, children }: MessagePageProps) {
  return (
    <Layout title={title} shell={shell}>
      <section class="message">
        <h1>{title}</h1>
        {children}
      </section>
    </Layout>
  );
}
